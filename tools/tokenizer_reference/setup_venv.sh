#!/usr/bin/env bash
# Idempotent: makes tools/tokenizer_reference/.venv with Hugging Face `tokenizers` from PyPI (the
# version the fixtures were made with). Prints the python to use as the last line ("PYTHON=<path>").
set -eu
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
VERSION=0.23.3
CHECK="import tokenizers, unicodedata2; assert tokenizers.__version__ == '$VERSION', tokenizers.__version__; assert unicodedata2.unidata_version == '16.0.0'"

if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" 2>/dev/null; }; then
  echo "setup_venv: creating $VENV with tokenizers==$VERSION" >&2
  python3 -m venv "$VENV" >&2
  # unicodedata2 16.0.0: the Unicode version of HF's Oniguruma classes (make_unicode_tables.py).
  "$VENV/bin/python" -m pip install --quiet "tokenizers==$VERSION" "unicodedata2==16.0.0" >&2
  "$VENV/bin/python" -c "$CHECK" >&2
fi
echo "PYTHON=$VENV/bin/python"
