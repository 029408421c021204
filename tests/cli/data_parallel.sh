#!/usr/bin/env bash
# Data-parallel training through mpirun (issue 36) gives one process's bits: a 2-layer hidden-64
# model, fp32, one thread per rank.
#  - 2 ranks = grad_accum 2 over 20 steps (the reduction overlapped with the backward pass);
#    4 ranks, and 2 ranks with the reduction overlapped or after the pass, = grad_accum 4 (model,
#    AdamW state, metrics); the same with ZeRO-1 (AdamW's state sharded, gathered into the
#    checkpoint), overlapped on 2 ranks
#  - resuming with another rank count (2 -> 1 -> 4, ZeRO-1 on the ranks) continues the same run
#  - SIGUSR1 to rank 1 alone stops both ranks at the same step (agreed after each step), with a
#    checkpoint and exit 0; the resumed run equals an uninterrupted one; the same for SIGTERM
#    sent to mpirun
#  - a rank stopped by SIGSTOP: the other's watchdog ends the job, naming the step
#  - 3 ranks are refused with a message, and the job ends
# Usage: data_parallel.sh GATTN
set -euo pipefail
gattn=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GATTN=$gattn
ranks() { timeout 120 "$here/../../scripts/train_ranks.sh" "$@"; }

"$gattn" synthetic --out "$work/data" --train-tokens 40000 --val-tokens 4000 >/dev/null
config() {  # config NAME GRAD_ACCUM STEPS
  cat >"$work/$1.json" <<JSON
{"model": "$here/tiny_64.json",
 "data": {"train": "$work/data/train.bin", "val": "$work/data/val.bin", "seq_len": 32, "window": "bos"},
 "batch_size": 2, "grad_accum": $2, "steps": $3, "eval": {"every": 10, "windows": 8},
 "checkpoint": {"every": 0, "keep": 1}, "threads": 1, "precision": "fp32", "out": "unused",
 "optimizer": {"lr": 0.01}, "schedule": {"warmup_steps": 2}}
JSON
}
config accum2 2 20
config accum4 4 20
config long 2 100000

# same RUN_A RUN_B STEP: the checkpoints' model and optimizer bytes, and the metrics but timings.
same() {
  local a=$work/$1/checkpoints/step_$(printf %08d "$3") b=$work/$2/checkpoints/step_$(printf %08d "$3")
  cmp "$a/model.safetensors" "$b/model.safetensors"
  cmp "$a/optimizer.safetensors" "$b/optimizer.safetensors"
  python3 - "$work/$1/metrics.jsonl" "$work/$2/metrics.jsonl" <<'PY'
import json, sys
def records(path):
    rows = [json.loads(line) for line in open(path)]
    for r in rows:
        r.pop("tokens_per_s")
        r.pop("reduction_wait_s", None)  # data-parallel runs only
    return rows
a, b = records(sys.argv[1]), records(sys.argv[2])
assert a == b, f"metrics differ:\n{a}\n{b}"
PY
}

"$gattn" train --config "$work/accum2.json" --out "$work/one2" >/dev/null 2>&1
ranks 2 --config "$work/accum2.json" --out "$work/two" --no-zero1 --overlap-reduction >"$work/two.out" 2>"$work/two.err"
grep -q '"steps": 20' "$work/two.out"  # rank 0 prints the summary
same one2 two 20
echo "2 ranks = grad_accum 2 over 20 steps: model, optimizer state and metrics identical"

"$gattn" train --config "$work/accum4.json" --out "$work/one4" >/dev/null 2>&1
ranks 4 --config "$work/accum4.json" --out "$work/four" --no-zero1 >/dev/null 2>&1
same one4 four 20
ranks 2 --config "$work/accum4.json" --out "$work/two4" --no-zero1 --overlap-reduction >/dev/null 2>&1
same one4 two4 20
ranks 2 --config "$work/accum4.json" --out "$work/two4s" --no-zero1 >/dev/null 2>&1
same one4 two4s 20
echo "4 ranks = grad_accum 4 = 2 ranks (reduction overlapped with the backward pass, or after it): identical"

ranks 2 --config "$work/accum2.json" --out "$work/zero2" --zero1 --overlap-reduction >/dev/null 2>"$work/zero2.err"
same one2 zero2 20
ranks 4 --config "$work/accum4.json" --out "$work/zero4" --zero1 >/dev/null 2>&1
same one4 zero4 20
echo "ZeRO-1 on 2 and 4 ranks: identical; $(grep -o "AdamW's two moments take.*" "$work/zero2.err")"

ranks 2 --config "$work/accum4.json" --out "$work/mixed" --zero1 --stop-at-step 7 >/dev/null 2>&1
"$gattn" train --config "$work/accum4.json" --out "$work/mixed" --resume --stop-at-step 14 \
  >/dev/null 2>&1
ranks 4 --config "$work/accum4.json" --out "$work/mixed" --zero1 --resume >/dev/null 2>&1
same one4 mixed 20
echo "2 (ZeRO-1) -> 1 -> 4 (ZeRO-1) ranks, resumed: identical to the uninterrupted run"

# rank1_of RUN: once RUN's metrics have 3 steps, the pid of its rank 1 (the run's folder is in
# each rank's command line).
rank1_of() {
  for _ in $(seq 600); do
    [ -f "$1/metrics.jsonl" ] && [ "$(wc -l <"$1/metrics.jsonl")" -ge 3 ] && break
    sleep 0.05
  done
  # grep reads the whole environment (with -q it could stop early, and tr's SIGPIPE would fail
  # the pipeline under pipefail); the function succeeds whatever the last pid was.
  for pid in $(pgrep -f -- "--out $1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -x OMPI_COMM_WORLD_RANK=1 >/dev/null
    then echo "$pid"; fi
  done
  return 0
}

# A stop that reaches one rank: both stop after the same step.
ranks 2 --config "$work/long.json" --out "$work/stopped" >/dev/null 2>"$work/stopped.err" &
launcher=$!
rank1=$(rank1_of "$work/stopped")
[ -n "$rank1" ] || { echo "no rank 1 found"; exit 1; }
kill -USR1 "$rank1"
wait "$launcher" || { echo "the stopped job exited $?"; cat "$work/stopped.err"; exit 1; }
stop=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" \
  "$(ls -d "$work"/stopped/checkpoints/step_* | tail -1)/state.json")
grep -q "stopped by signal 10 at step $stop" "$work/stopped.err"
"$gattn" train --config "$work/long.json" --out "$work/stopped" --resume \
  --stop-at-step $((stop + 2)) >/dev/null 2>&1
"$gattn" train --config "$work/long.json" --out "$work/straight" --stop-at-step $((stop + 2)) \
  >/dev/null 2>&1
same straight stopped $((stop + 2))
echo "SIGUSR1 to rank 1 alone: both ranks stopped at step $stop, exit 0; resumed = uninterrupted"

# SIGTERM to mpirun (a scheduler ending the job): OpenMPI 4.1 waits odls_base_sigkill_timeout
# seconds, sends the ranks SIGTERM, waits as long again and sends SIGKILL. The ranks agree on
# the stop and checkpoint within the second wait; mpirun itself exits non-zero.
MPIRUN_FLAGS="--mca odls_base_sigkill_timeout 3" ranks 2 --config "$work/long.json" \
  --out "$work/term" >/dev/null 2>"$work/term.err" &
launcher=$!
[ -n "$(rank1_of "$work/term")" ] || { echo "no rank 1 found"; exit 1; }
mpirun_pid=$(pgrep -f -- "^mpirun .*--out $work/term")
kill -TERM "$mpirun_pid"
started=$SECONDS
wait "$launcher" || true
stop=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" \
  "$(ls -d "$work"/term/checkpoints/step_* | tail -1)/state.json")
grep -q "stopped by signal 15 at step $stop" "$work/term.err" || { cat "$work/term.err"; exit 1; }
"$gattn" train --config "$work/long.json" --out "$work/term" --resume \
  --stop-at-step $((stop + 2)) >/dev/null 2>&1
"$gattn" train --config "$work/long.json" --out "$work/term_straight" \
  --stop-at-step $((stop + 2)) >/dev/null 2>&1
same term_straight term $((stop + 2))
echo "SIGTERM to mpirun (odls_base_sigkill_timeout 3): both ranks stopped at step $stop with a" \
  "checkpoint, mpirun ended after $((SECONDS - started)) s; resumed = uninterrupted"

# A rank that stops (SIGSTOP) ends the job through the others' watchdog (2 s here, 60 s by
# default) instead of holding them for ever.
GATTN_TEST_WATCHDOG_SECONDS=2 ranks 2 --config "$work/long.json" --out "$work/hung" \
  >/dev/null 2>"$work/hung.err" &
launcher=$!
rank1=$(rank1_of "$work/hung")
[ -n "$rank1" ] || { echo "no rank 1 found"; exit 1; }
kill -STOP "$rank1"
started=$SECONDS
if wait "$launcher"; then
  echo "the job with a stopped rank exited 0"
  exit 1
fi
kill -KILL "$rank1" 2>/dev/null || true
grep -q "rank 0 of 2: watchdog: .* in step [0-9]* has waited .*; no word from rank 1: .*ending the job" \
  "$work/hung.err" || { cat "$work/hung.err"; exit 1; }
echo "a SIGSTOPped rank: the job ended in $((SECONDS - started)) s: $(grep -o 'rank 0 of 2: watchdog: .*no word from rank 1' "$work/hung.err" | head -1)"

if ranks 3 --config "$work/accum4.json" --out "$work/three" >/dev/null 2>"$work/three.err"; then
  echo "3 ranks were not refused"
  exit 1
fi
grep -q "must be the number of ranks (3, a power of two)" "$work/three.err"
echo "3 ranks refused: $(grep -m1 -o 'grad_accum (4) must be[^;]*' "$work/three.err")"
