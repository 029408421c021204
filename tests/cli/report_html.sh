#!/usr/bin/env bash
# gattn analyze's HTML report, rendered by headless Chromium: every plotted number is the JSON's.
# Usage: report_html.sh GATTN MODEL_CONFIG CHECK_REPORT_PY [LAYER:HEAD ...]  (attention maps; default 0:1 1:3)
set -euo pipefail
gattn=$1 config=$2 check=$3
maps=("${@:4}")
((${#maps[@]})) || maps=(0:1 1:3)
map_args=()
for m in "${maps[@]}"; do map_args+=(--map "$m"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gattn" synthetic --out "$work/data" --train-tokens 100 --val-tokens 4000 >/dev/null
"$gattn" init --config "$config" --out "$work/model" --seed 3 >/dev/null
"$gattn" analyze --checkpoint "$work/model" --data "$work/data/val.bin" --seq 64 --sequences 4 \
  "${map_args[@]}" --out "$work/analysis.json" --html "$work/report.html" >/dev/null
# Chromium wants a writable home for its profile; --no-sandbox since CI runs as root.
HOME=$work chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --dump-dom "file://$work/report.html" \
  >"$work/dom.html" 2>"$work/chromium.log" || { cat "$work/chromium.log"; exit 1; }
python3 "$check" "$work/dom.html" "$work/analysis.json"
