#!/usr/bin/env bash
# gattn compare's side-by-side HTML report, rendered by headless Chromium: every plotted number is
# the comparison JSON's, both models' per-head values and attention maps are plotted.
# Usage: compare_html.sh GATTN MODEL_CONFIG CHECK_REPORT_PY
set -euo pipefail
gattn=$1 config=$2 check=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash "$(dirname "$0")/tiny_run.sh" "$gattn" "$config" "$work"
for seed in 0 1; do
  "$gattn" train --config "$work/run.json" --seed $seed --gate '{"position": "none"}' \
    --out "$work/baseline-s$seed" >/dev/null
  "$gattn" train --config "$work/run.json" --seed $seed --out "$work/g1-s$seed" >/dev/null
done
"$gattn" compare --baseline "$work/baseline-s0" "$work/baseline-s1" \
  --candidate "$work/g1-s0" "$work/g1-s1" --threads 1 \
  --out "$work/comparison.json" --html "$work/report.html" | grep "report: $work/report.html"
HOME=$work chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --dump-dom "file://$work/report.html" \
  >"$work/dom.html" 2>"$work/chromium.log" || { cat "$work/chromium.log"; exit 1; }
python3 "$check" "$work/dom.html" "$work/comparison.json" /baseline/analysis /candidate/analysis
