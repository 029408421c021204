#!/usr/bin/env bash
# gattn against Hugging Face `tokenizers`, side by side in one run: training (same documents, vocab
# size and thread count) and encoding (same texts and tokenizer files; one thread, then batches on
# THREADS threads). Medians of RUNS runs; the ratio is HF's time over gattn's (> 1: gattn faster).
#   tools/tokenizer_reference/compare_speed.sh [THREADS (default: all cores)] [RUNS (default 5)]
# Text: the tokenizer test sample (tests/tokenizer/assemble_sample.sh), 7.6 MB in 15 documents,
# encoded as 472 line-aligned chunks of <= 16 KB. Tokenizers: the fixtures gattn_trained.json (no
# normaliser) and hf_trained.json (NFC, as Qwen2), both 8192 tokens. Needs a built gattn.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
THREADS="${1:-$(nproc)}"
RUNS="${2:-5}"
VOCAB=8192
GATTN="${GATTN:-}"
for candidate in "$ROOT/build-tok/gattn" "$ROOT/build/gattn"; do
  [ -n "$GATTN" ] || { [ -x "$candidate" ] && GATTN="$candidate"; } || true
done
[ -n "$GATTN" ] || { echo "compare_speed: no gattn binary (build it, or set GATTN=...)" >&2; exit 1; }
PY="$("$HERE/setup_venv.sh" | sed -n 's/^PYTHON=//p' | tail -n 1)"
export RAYON_NUM_THREADS="$THREADS" RAYON_RS_NUM_CPUS="$THREADS" OMP_NUM_THREADS="$THREADS"
export TOKENIZERS_PARALLELISM=true

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$ROOT/tests/tokenizer/assemble_sample.sh" "$tmp/sample"
DOCS="$tmp/sample/documents"
(cd "$HERE" && "$PY" -c "
import json, sys
from pathlib import Path
from common import read_documents, chunks_of
with open('$tmp/chunks.jsonl', 'w', encoding='utf-8') as out:
    for _, data in read_documents(Path('$DOCS')):
        for o, n in chunks_of(data):
            out.write(json.dumps({'text': data[o:o + n].decode('utf-8')}, ensure_ascii=False) + '\n')
")

median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
ratio() { awk -v hf="$1" -v g="$2" 'BEGIN {printf "%.2f", hf / g}'; }
row() { printf '%-44s %10s %10s %8sx\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }

echo "gattn: $GATTN; tokenizers $("$PY" -c 'import tokenizers; print(tokenizers.__version__)');" \
     "$THREADS thread(s); medians of $RUNS runs; $(cat "$DOCS"/* | wc -c) bytes"
printf '%-44s %10s %10s %9s\n' "task" "HF s" "gattn s" "HF/gattn"

gattn_train=$(for _ in $(seq "$RUNS"); do
  "$GATTN" tokenizer train --input "$DOCS" --vocab-size "$VOCAB" --out "$tmp/t.json" --threads "$THREADS" |
    sed -n 's/.* in \([0-9.]*\) s .*/\1/p'
done | median)
hf_train=$(cd "$HERE" && "$PY" hf_speed.py train "$DOCS" "$VOCAB" "$RUNS" | sed -n 's/median_s=//p')
row "train, vocab $VOCAB" "$hf_train" "$gattn_train"

for file in gattn_trained.json hf_trained.json; do
  tok="$ROOT/tests/fixtures/tokenizer/$file"
  for mode in sequential batch; do
    g=$("$GATTN" tokenizer bench --tokenizer "$tok" --input "$tmp/chunks.jsonl" --mode "$mode" \
          --repeat "$RUNS" --threads "$THREADS" | sed -n 's/median_ms=//p' | awk '{print $1 / 1000}')
    h=$(cd "$HERE" && "$PY" hf_speed.py encode "$tok" "$tmp/chunks.jsonl" "$mode" "$RUNS" | sed -n 's/median_s=//p')
    label="encode $mode"; [ "$mode" = batch ] && label="encode batch ($THREADS threads)"
    row "$label, $file" "$h" "$g"
    if [ "$mode" = batch ]; then
      h=$(cd "$HERE" && "$PY" hf_speed.py encode "$tok" "$tmp/chunks.jsonl" batch_fast "$RUNS" | sed -n 's/median_s=//p')
      row "  vs HF encode_batch_fast" "$h" "$g"
    fi
  done
done
