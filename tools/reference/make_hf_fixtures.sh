#!/usr/bin/env bash
# Regenerate tests/fixtures/hf/ (the Hugging Face loader's golden models) with the transformers
# version pinned in requirements-hf.txt, in tools/reference/.venv-hf (made here if missing; torch
# from PyPI). Extra arguments go to make_hf_fixtures.py (e.g. --only qwen3_f32).
set -eu
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv-hf"
if ! [ -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import torch, transformers, safetensors' 2>/dev/null; then
    echo "make_hf_fixtures: creating $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -r "$HERE/requirements-hf.txt" >&2
fi
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cd "$HERE"
exec "$VENV/bin/python" "$HERE/make_hf_fixtures.py" "$@"
