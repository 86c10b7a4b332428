#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh "$@"
ctest --test-dir build --output-on-failure -j "$(nproc)"
