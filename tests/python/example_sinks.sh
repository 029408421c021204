#!/usr/bin/env bash
# examples/sinks.py end to end on tiny models: synthetic data, a baseline and a G1 run of 6 steps
# (tests/cli/tiny_g1_65.json), then the example (attention maps, gates held open by hooks, a
# retrofit fine-tuned 3 steps through gattn.train) writing its PNG. PYTHON is the interpreter
# that imports gattn (build-python's with PYTHONPATH, or a venv that pip-installed it).
# Usage: example_sinks.sh PYTHON GATTN REPO_ROOT
set -euo pipefail
python=$1 gattn=$2 root=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash "$root/tests/cli/tiny_run.sh" "$gattn" "$root/tests/cli/tiny_g1_65.json" "$work"
"$gattn" train --config "$work/run.json" --gate '{"position": "none"}' --out "$work/baseline" \
  >/dev/null
"$gattn" train --config "$work/run.json" --out "$work/g1" >/dev/null
"$python" "$root/examples/sinks.py" --baseline "$work/baseline" --g1 "$work/g1" \
  --run-config "$work/run.json" --windows 4 --seq 32 --steps 3 --out "$work/sinks.png"
"$python" -c "import sys; d = open(sys.argv[1], 'rb').read(); print('png', d[1:4].decode(), len(d) > 10000)" "$work/sinks.png"
