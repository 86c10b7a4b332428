#!/usr/bin/env bash
# Configures and builds halfcaf into ./build (CUDA backend when the toolkit is present).
# Extra arguments go to cmake, e.g. -DHALFCAF_USE_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j "$(nproc)"
