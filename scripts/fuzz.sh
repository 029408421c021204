#!/usr/bin/env bash
# Fuzzes the readers of untrusted files with libFuzzer: builds the targets with clang in
# build-fuzz/ (GATTN_FUZZ=ON: ASan + UBSan + coverage) and runs each for SECONDS on a scratch copy
# of its committed corpus (tests/fuzz/corpus/<target>/). Crash inputs are written to
# tests/fuzz/crashes/<target>/; once fixed, move them into the corpus so every build replays them.
#   scripts/fuzz.sh [SECONDS (default 60)] [TARGET...]   targets: safetensors config run_config
#                                                         tokenizer_json shard hf_config hf_index
#                                                         openai_request training_state chat_template
#                                                         http_request jinja gguf
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(safetensors config run_config tokenizer_json shard hf_config hf_index openai_request training_state chat_template http_request jinja gguf)

cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGATTN_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for target in "${targets[@]}"; do
  mkdir -p "tests/fuzz/crashes/$target" "$scratch/$target"
  cp tests/fuzz/corpus/"$target"/* "$scratch/$target/"
  log="$scratch/$target.log"
  # Inputs above 64 KiB add nothing the seeds do not (the deep-nesting seeds are cut to it).
  if ! "build-fuzz/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=65536 \
      -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="tests/fuzz/crashes/$target/" "$scratch/$target" >"$log" 2>&1; then
    status=1
  fi
  runs=$(grep -oP 'stat::number_of_executed_units: \K[0-9]+' "$log" || echo "?")
  crashes=$(find "tests/fuzz/crashes/$target" -type f | wc -l)
  echo "fuzz $target: $runs executions in ${seconds}s, $crashes crash inputs in tests/fuzz/crashes/$target/"
  [ "$crashes" -eq 0 ] || tail -40 "$log"
done
exit $status
