#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, and runs every test with CTest.
# Then it says which peer comparisons (PyTorch, torchvision, ONNX Runtime: tests/util/peer.h)
# ran and which could not, and which tests took longest. Under HALFCAF_PEER=1 (as CI runs it) a
# missing peer fails its tests, and a run in which no peer comparison ran fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh "$@"
export HALFCAF_PEER_LOG=$PWD/build/peer_log.txt
rm -f "$HALFCAF_PEER_LOG"
status=0
ctest --test-dir build --output-on-failure -j "$(nproc)" || status=$?
bash tools/test_report.sh build || status=$?
exit $status
