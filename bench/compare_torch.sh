#!/usr/bin/env bash
# gattn vs PyTorch (eager and torch.compile), same model, batch and threads. PyTorch comes from
# PyPI in the reference venv (tools/reference/setup_venv.sh). Arguments go to compare_torch.py.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/gattn ] || scripts/setup.sh release
python=$(tools/reference/setup_venv.sh | sed -n 's/^PYTHON=//p' | tail -n 1)
exec "$python" bench/compare_torch.py --gattn build/gattn "$@"
