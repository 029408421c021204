#!/usr/bin/env bash
# The experiment runners end to end at toy size (long_context reuses the core runner's runs):
# 2 variants, 1 seed, a few steps each, on a small synthetic shard, 2 runs at once; each must
# train, analyse, resume (a rerun trains nothing) and write its summary.
# Usage: experiments_smoke.sh GATTN EXPERIMENTS_DIR
set -euo pipefail
gattn=$1 experiments=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gattn" synthetic --out "$work/data" --train-tokens 20000 --val-tokens 5000 >/dev/null
for runner in core sink stability variants precision; do
  python3 "$experiments/$runner.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
    --jobs 2 --out "$work/$runner" >"$work/$runner.log" || { cat "$work/$runner.log"; exit 1; }
  python3 "$experiments/$runner.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
    --out "$work/$runner" >"$work/$runner.again.log"
  [ "$(wc -l <"$work/$runner/results.jsonl")" = 2 ] || { echo "$runner: a rerun trained again"; exit 1; }
  rows=$(grep -cE '^\| [a-z_.0-9]+( s[0-9]+)? \| [0-9]+\.[0-9]{4} \| [0-9]' "$work/$runner/summary.md")
  echo "$runner: $rows rows with a val loss"
done
python3 "$experiments/long_context.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --core "$work/core" --out "$work/long_context" >"$work/long_context.log" || { cat "$work/long_context.log"; exit 1; }
echo "long_context: $(grep -cE '^\| [0-9]+ \| [0-9]+\.[0-9]{4} \|' "$work/long_context/summary.md") lengths," \
  "$(grep -cE '^\| (none|ntk|yarn): g1_elementwise − baseline \| 1 \|' "$work/long_context/summary.md") growth tests"
# Retrofitting a gate onto the core runner's trained baseline; the stats helpers' known values.
source=$(ls -d "$work"/core/runs/*/train | sed -n 1p)
python3 "$experiments/retrofit.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --source "$source" --out "$work/retrofit" >"$work/retrofit.log" || { cat "$work/retrofit.log"; exit 1; }
echo "retrofit: $(grep -cE '^\| (no_gate|g1_identity|g1_random) \| 0 \|' "$work/retrofit/summary.md") runs"
# Depth (checkpoints analysed) and the G2 mechanism (position split, interventions) on its runs.
python3 "$experiments/depth.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --out "$work/depth" >"$work/depth.log" || { cat "$work/depth.log"; exit 1; }
grep -h "checkpoints analysed" "$work/depth/summary.md"
python3 "$experiments/mechanism.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --out "$work/mechanism" --depth-out "$work/depth" >"$work/mechanism.log" || { cat "$work/mechanism.log"; exit 1; }
echo "mechanism: $(grep -cE '^\| (baseline|g1|g2), (value|gate)@first' "$work/mechanism/mechanism/summary.md") intervention rows"
# Their rows restored without checkpoints (restore_rows.py): the saved analyses are read, nothing
# is trained or analysed again (a gattn that fails), and both summaries come out the same.
for r in depth mechanism; do
  python3 "$experiments/restore_rows.py" --save "$work/$r" "$work/$r.rows.jsonl" >/dev/null
  python3 "$experiments/restore_rows.py" "$work/$r.rows.jsonl" "$work/${r}_restored" >/dev/null
done
python3 "$experiments/depth.py" --smoke --gattn /bin/false --data "$work/data" --threads 1 \
  --out "$work/depth_restored" >"$work/depth_restored.log" || { cat "$work/depth_restored.log"; exit 1; }
python3 "$experiments/mechanism.py" --smoke --gattn /bin/false --data "$work/data" --threads 1 \
  --out "$work/mechanism_restored" --depth-out "$work/depth_restored" >"$work/mechanism_restored.log" ||
  { cat "$work/mechanism_restored.log"; exit 1; }
diff <(sed 1,2d "$work/depth/summary.md") <(sed 1,2d "$work/depth_restored/summary.md") &&
  diff <(sed 1,2d "$work/mechanism/mechanism/summary.md") <(sed 1,2d "$work/mechanism_restored/mechanism/summary.md") ||
  { echo "depth/mechanism: the restored rows give another summary"; exit 1; }
echo "restore_rows: depth and mechanism, the same summaries"
# The powered-seeds plan (section 9) at toy size: all six variants, 2 seeds, the five verdicts.
python3 "$experiments/seeds.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 --jobs 2 \
  --out "$work/seeds" >"$work/seeds.log" || { cat "$work/seeds.log"; exit 1; }
echo "seeds: $(grep -cE '^- g1_[a-z_]+ − [a-z_0-9]+: mean' "$work/seeds/seeds/summary.md") verdicts"
# The natural-text probes (section 10) at toy size: calibrated, trained, every checkpoint read.
python3 "$experiments/text_sink.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 --jobs 2 \
  --out "$work/text_sink" >"$work/text_sink.log" || { cat "$work/text_sink.log"; exit 1; }
echo "text_sink: $(grep -c '^Grows a sink' "$work/text_sink/summary.md") probes"
python3 "$experiments/text_sink.py" --smoke --mact --gattn "$gattn" --data "$work/data" --threads 1 --jobs 2 \
  --out "$work/text_sink" >"$work/text_mact.log" || { cat "$work/text_mact.log"; exit 1; }
echo "text_sink --mact: $(grep -cE '^Verdict .*\*\*(reproduced|contradicted|not significant)' "$work/text_sink/mact/summary.md") verdict"
# Issue 30's three pre-registered experiments at toy size: every planned verdict is written.
python3 "$experiments/confirm.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --out "$work/confirm" >"$work/confirm.log" || { cat "$work/confirm.log"; exit 1; }
verdicts=$(grep -cE '^- .+: \*\*(reproduced|contradicted|not significant|untested)\*\*' "$work/confirm/confirm/summary.md")
[ "$verdicts" = 9 ] || { echo "confirm: $verdicts verdicts, not 3 + 4 + 2"; exit 1; }
echo "confirm: $verdicts verdicts"
python3 "$experiments/lr_budget.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --out "$work/lr_budget" >"$work/lr_budget.log" || { cat "$work/lr_budget.log"; exit 1; }
grep -qE '^Verdict .*\*\*(reproduced|contradicted|not significant|untested)\*\*' "$work/lr_budget/summary.md" ||
  { echo "lr_budget: no verdict"; exit 1; }
echo "lr_budget: $(grep -cE '^\| (baseline|g1) \| [0-9.e-]+ \|' "$work/lr_budget/summary.md") sweep rows"
# Rows kept in the repository across sessions (restore_rows.py): saved, restored into an empty
# folder, the runner trains nothing (a gattn that fails) and writes the same summary.
python3 "$experiments/restore_rows.py" --save --origin smoke "$work/lr_budget" "$work/rows.jsonl" >/dev/null
python3 "$experiments/restore_rows.py" "$work/rows.jsonl" "$work/lr_budget_restored" >/dev/null
python3 "$experiments/lr_budget.py" --smoke --gattn /bin/false --data "$work/data" --threads 1 \
  --out "$work/lr_budget_restored" >"$work/lr_budget_restored.log" || { cat "$work/lr_budget_restored.log"; exit 1; }
diff <(sed 1,2d "$work/lr_budget/summary.md") <(sed 1,2d "$work/lr_budget_restored/summary.md") ||
  { echo "lr_budget: the restored rows give another summary"; exit 1; }
echo "restore_rows: $(wc -l <"$work/rows.jsonl") rows, the same summary"
python3 "$experiments/sink_cause.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --variants-out "$work/seeds" --out "$work/sink_cause" >"$work/sink_cause.log" || { cat "$work/sink_cause.log"; exit 1; }
verdicts=$(grep -cE '^- (ii|iv)_.+ − (i|iii)_.+: \*\*' "$work/sink_cause/summary.md")
[ "$verdicts" = 2 ] || { echo "sink_cause: $verdicts verdicts, not 2"; exit 1; }
echo "sink_cause: $verdicts verdicts"
python3 "$experiments/stats.py"
(cd "$experiments" && python3 -c "import stability; print(stability.self_check())")
python3 "$experiments/check_results.py" --self-check
python3 "$experiments/check_results.py"
# Benjamini–Hochberg over the summaries: known values, and summaries/bh.md is the current output.
python3 "$experiments/bh.py" --self-check
python3 "$experiments/bh.py" "$experiments/summaries" | diff - "$experiments/summaries/bh.md" >/dev/null ||
  { echo "summaries/bh.md is not bh.py's output over the summaries: rerun bh.py --out"; exit 1; }
# Issue 31's pre-registered hybrid experiment at toy size: both primary verdicts are written.
python3 "$experiments/hybrid.py" --smoke --gattn "$gattn" --data "$work/data" --threads 1 \
  --out "$work/hybrid" >"$work/hybrid.log" || { cat "$work/hybrid.log"; exit 1; }
verdicts=$(grep -cE '^- (val loss|M-Act): hybrid_g1 − hybrid_none: \*\*' "$work/hybrid/summary.md")
[ "$verdicts" = 2 ] || { echo "hybrid: $verdicts verdicts, not 2"; exit 1; }
echo "hybrid: $verdicts verdicts"
