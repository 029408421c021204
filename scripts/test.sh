#!/usr/bin/env bash
# Sets up, builds gattn twice (release, and ASan+UBSan) and runs the whole test suite in both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release asan
for dir in build build-asan; do
  echo "== tests in $dir"
  (cd "$dir" && ctest --output-on-failure -j "$(nproc)")
done
