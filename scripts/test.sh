#!/usr/bin/env bash
# Sets up, builds gattn twice (release, and ASan+UBSan) and runs the whole test suite in both, and
# the Python extension (a third, position-independent build of its targets) with its tests, and
# `pip install .` into a fresh venv (a fourth build) with the example run there, and
# `pip install -e .` into another (a fifth);
# prints each build's ten slowest tests. Exits non-zero when a test fails or a must-run test skips.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release asan python
failed=0
# The Python extension's tests in build-python (its own position-independent build; not the ASan
# one: ASan would have to be preloaded into the interpreter).
echo "== Python tests in build-python (none in build-asan)"
(cd build-python && ctest --output-on-failure -R '^python\.') || failed=1
# As a user installs it: `pip install .` into a fresh venv (scikit-build-core, nanobind, numpy and
# matplotlib from PyPI; the CMake build in build-pip/), then the example there.
echo "== pip install . into a fresh venv, and examples/sinks.py with it"
rm -rf build-pip/venv
{ python3 -m venv build-pip/venv &&
  build-pip/venv/bin/python -m pip install -q . matplotlib==3.11.2 &&
  bash tests/python/example_sinks.sh build-pip/venv/bin/python build/gattn "$PWD"; } || failed=1
# `pip install -e .` into a second fresh venv (a fifth build: pip's new isolated environment
# makes scikit-build-core start build-pip/'s CMake folder afresh).
echo "== pip install -e . into a fresh venv"
rm -rf build-pip/venv-editable
{ python3 -m venv build-pip/venv-editable &&
  build-pip/venv-editable/bin/python -m pip install -q -e . &&
  build-pip/venv-editable/bin/python tests/python/editable_check.py "$PWD" build/gattn; } ||
  failed=1
for dir in build build-asan; do
  echo "== tests in $dir"
  log="$dir/Testing/ctest-output.log"
  mkdir -p "$dir/Testing"
  (cd "$dir" && ctest --output-on-failure -j "$(nproc)") 2>&1 | tee "$log" || failed=1
  echo "== the ten slowest tests in $dir (seconds)"
  # sed -n reads all of sort's output: head would close the pipe early and, under pipefail,
  # SIGPIPE (exit 141) would fail a run whose tests all passed.
  sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9]+\.[0-9]+) sec$/\2 \1/p' "$log" | sort -rn | sed -n 1,10p
done
exit "$failed"
