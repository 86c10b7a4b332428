#!/usr/bin/env bash
# Configures and builds halfcaf into ./build (CUDA backend when the toolkit is present).
# Extra arguments go to cmake, e.g. -DHALFCAF_USE_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_deps.sh
# The Python package (python/) builds with the venv tools/setup_python.sh makes; without it (no
# PyPI) the rest builds and its tests are left out, except under HALFCAF_PEER=1 (CI), which
# needs them.
py_args=()
if py=$(bash tools/setup_python.sh); then
  py_args=(-DPython_EXECUTABLE="$py" -DHALFCAF_PYTHON=ON)
elif [[ "${HALFCAF_PEER:-0}" == "1" ]]; then
  echo "build: tools/setup_python.sh failed" >&2
  exit 1
else
  echo "build: no Python venv (tools/setup_python.sh failed): the Python package is left out" >&2
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${py_args[@]}" "$@"
cmake --build build -j "$(nproc)"
