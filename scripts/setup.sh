#!/usr/bin/env bash
# Installs gattn's dependencies from Debian's packages (idempotent) and builds it.
#   scripts/setup.sh [release|asan]...   (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."

# Every scripts/packages/*.txt lists packages one per line ('#' starts a comment).
mapfile -t packages < <(sed 's/#.*//' scripts/packages/*.txt | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The official openai client, for the cli.serve_openai test (PyPI; pinned as the check expects).
venv=tools/reference/.venv-serve
if ! "$venv/bin/python" -c "import openai" 2>/dev/null; then
  echo "setup: installing openai==3.63.0 into $venv"
  python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q openai==3.63.0 ||
    echo "setup: could not install openai from PyPI; the cli.serve_openai test will fail" >&2
fi

jobs=$(nproc)
for flavour in "${@:-release}"; do
  case "$flavour" in
    release) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
    asan) dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGATTN_SANITIZE=ON) ;;
    *) echo "setup: unknown build flavour '$flavour' (expected release or asan)" >&2; exit 2 ;;
  esac
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
done
