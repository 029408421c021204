#!/usr/bin/env bash
# Installs gattn's dependencies from Debian's packages (idempotent) and builds it.
#   scripts/setup.sh [release|asan|python]...   (default: release)
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

# The Python extension's build and test dependencies (PyPI, pinned), for the python flavour: the
# module (-DGATTN_PYTHON=ON, every library position-independent) built with this venv's
# interpreter in build-python, apart from the release build, whose binaries stay as they were.
pyvenv=python/.venv
pypackages=(nanobind==3.1.0 numpy==2.4.6 pytest==9.2.0 matplotlib==3.11.2 ml_dtypes==0.7.0)
if [[ " $* " == *" python "* ]] &&
  ! "$pyvenv/bin/python" -c "import nanobind, numpy, pytest, matplotlib, ml_dtypes" 2>/dev/null; then
  echo "setup: installing ${pypackages[*]} into $pyvenv (PyPI)"
  python3 -m venv "$pyvenv" && "$pyvenv/bin/python" -m pip install -q "${pypackages[@]}" || {
    echo "setup: could not install the Python extension's dependencies from PyPI into $pyvenv" >&2
    exit 1
  }
fi

jobs=$(nproc)
for flavour in "${@:-release}"; do
  case "$flavour" in
    release) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release -DGATTN_PYTHON=OFF); targets=() ;;
    asan) dir=build-asan; targets=()
          flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGATTN_SANITIZE=ON -DGATTN_PYTHON=OFF) ;;
    # the module and what its tests run (tests/python)
    python) dir=build-python; targets=(--target _gattn _gattn_stub gattn gattn_infer_bits)
            flags=(-DCMAKE_BUILD_TYPE=Release -DGATTN_PYTHON=ON
                   "-DPython_EXECUTABLE=$PWD/$pyvenv/bin/python") ;;
    *) echo "setup: unknown build flavour '$flavour' (expected release, asan or python)" >&2
       exit 2 ;;
  esac
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs" "${targets[@]}"
done
