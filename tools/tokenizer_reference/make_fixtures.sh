#!/usr/bin/env bash
# Regenerates tests/fixtures/tokenizer/ (see make_fixtures.py). Needs a built gattn (build-tok/ or
# build/, or --gattn PATH) and the Debian packages of scripts/packages/tokenizer.txt.
set -eu
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="$("$HERE/setup_venv.sh" | sed -n 's/^PYTHON=//p' | tail -n 1)"
exec "$PY" "$HERE/make_fixtures.py" "$@"
