#!/usr/bin/env bash
# Idempotent: makes tools/reference/.venv with torch, transformers, safetensors, numpy from PyPI.
# If that fails, falls back to Debian's python3-torch with the system python (then transformers
# is usually missing and make_fixtures.py skips the Hugging Face anchor, loudly).
# Prints the python to use as the last line of stdout ("PYTHON=<path>").
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
CHECK='import torch, numpy, transformers, safetensors'

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" 2>/dev/null; then
    echo "PYTHON=$VENV/bin/python"
    exit 0
fi

echo "setup_venv: creating $VENV" >&2
if python3 -m venv "$VENV" >&2 \
   && "$VENV/bin/python" -m pip install torch transformers safetensors numpy >&2 \
   && "$VENV/bin/python" -c "$CHECK" >&2; then
    echo "PYTHON=$VENV/bin/python"
    exit 0
fi

echo "setup_venv: pip install failed; falling back to Debian python3-torch (HF anchor will be skipped)" >&2
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
if ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
    $SUDO apt-get update >&2 && $SUDO apt-get install -y python3-torch python3-numpy >&2 || {
        echo "setup_venv: apt-get install python3-torch failed too" >&2; exit 1; }
fi
/usr/bin/python3 -c 'import torch, numpy' >&2 || exit 1
echo "PYTHON=/usr/bin/python3"
