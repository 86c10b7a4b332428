#!/usr/bin/env bash
# Checks halfcaf on a GPU machine from the source tree: configures and builds the CUDA backend
# (CMake finds cuDNN / cuBLAS in the CUDA toolkit, under versioned names such as libcudnn.so.9,
# or in a Python environment's nvidia-cudnn-cu13 / cuBLAS wheels), then runs the same checks as a
# device run of a bundle, tools/gpu_run.sh, on this build: preflight (stops at once without a
# device), ResNet-50 fp32 vs fp16 (NCHW, NHWC; BENCH_COMPARE=0 leaves out the PyTorch peer), the
# GPU tests one process per suite, LeNet on Fashion-MNIST, and the cuDNN math-type check (no FP32
# convolution may run with tensor-op math). Exit status: 0 only if the build and every step passed.
#
# Usage: tools/gpu_check.sh [BUILD_DIR]        default BUILD_DIR: build-gpu
#   Environment: HALFCAF_CUDA_ARCHS (e.g. "90-real"; default: CMake's default list), JOBS (parallel
#                build jobs, default: all cores), BUDGET_S (default 1800 here) and the other
#                gpu_run.sh settings (BENCH_BATCHES, SUITE_S, ...). Logs: BUILD_DIR/gpu_check.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

BUILD_DIR=${1:-build-gpu}
JOBS=${JOBS:-$(nproc)}

if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake_args=(-S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALFCAF_USE_CUDA=ON)
  [[ -n "${HALFCAF_CUDA_ARCHS:-}" ]] && cmake_args+=("-DHALFCAF_CUDA_ARCHS=$HALFCAF_CUDA_ARCHS")
  if ! cmake "${cmake_args[@]}"; then
    echo "gpu_check: cmake failed (see above: the CUDA toolkit or cuDNN was not found)" >&2
    exit 1
  fi
fi
if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target halfcaf gpu_tests gpu_preflight benchmark \
    train_net; then
  echo "gpu_check: build failed (no gpu_tests / gpu_preflight target means $BUILD_DIR is not a" \
       "CUDA build: configure it with -DHALFCAF_USE_CUDA=ON)" >&2
  exit 1
fi
[[ "${BENCH_COMPARE:-1}" == "0" ]] && export PEER_S=0
BUDGET_S=${BUDGET_S:-1800} exec bash tools/gpu_run.sh --bin "$BUILD_DIR/bin" "$BUILD_DIR/gpu_check"
