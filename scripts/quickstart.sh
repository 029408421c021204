#!/usr/bin/env bash
# Sets up and builds gattn, then runs the main job on the bundled default config:
# the parameter table and timed forward+backward steps of the G1-gated model.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
scripts/setup.sh release
echo "== set-up and build: $(($(date +%s) - start)) s"
build/gattn step --config configs/default.json "$@"
