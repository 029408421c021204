#!/usr/bin/env bash
# Regenerate tests/fixtures/*.safetensors (runs the HF anchor first; fails if it disagrees).
# Extra arguments go to make_fixtures.py (e.g. --only baseline g1_elementwise).
set -eu
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="$("$HERE/setup_venv.sh" | sed -n 's/^PYTHON=//p' | tail -n 1)"
[ -n "$PY" ] || { echo "make_fixtures: no usable python" >&2; exit 1; }
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$PY" "$HERE/make_fixtures.py" "$@"
