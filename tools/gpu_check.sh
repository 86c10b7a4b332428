#!/usr/bin/env bash
# Checks halfcaf on a GPU machine: configures and builds the CUDA backend (or reuses a build
# folder), runs the GPU tests (`ctest -L gpu`), prints the cuDNN algorithm / math type choices the
# convolutions logged, and ends with a summary. Exit status: 0 only if the build and every GPU test
# passed (and no FP32 convolution ran with tensor-op math).
#
# Usage: tools/gpu_check.sh [BUILD_DIR]        default BUILD_DIR: build-gpu
# After the tests it trains LeNet for one epoch in FP32 and mixed precision on the GPU and runs a
# ResNet-50 FP32-vs-FP16 benchmark (BENCH_BATCHES, BENCH_ORDER, BENCH_COMPARE=1 for PyTorch).
#   Environment: HALFCAF_CUDA_ARCHS (e.g. "90-real"; default: CMake's default list),
#                JOBS (parallel build jobs, default: all cores), CTEST_ARGS (extra ctest flags).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

BUILD_DIR=${1:-build-gpu}
JOBS=${JOBS:-$(nproc)}
LOG_DIR="$BUILD_DIR/gpu_check"
status=0
declare -a summary

step() { printf '\n==== %s ====\n' "$*"; }
note() { summary+=("$*"); }

step "device"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader ||
    true
else
  echo "nvidia-smi not found (tests will skip if no device is visible)"
fi

step "configure + build ($BUILD_DIR)"
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake_args=(-S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALFCAF_USE_CUDA=ON)
  [[ -n "${HALFCAF_CUDA_ARCHS:-}" ]] && cmake_args+=("-DHALFCAF_CUDA_ARCHS=$HALFCAF_CUDA_ARCHS")
  if ! cmake "${cmake_args[@]}"; then
    echo "gpu_check: cmake failed" >&2
    exit 1
  fi
fi
if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target halfcaf gpu_tests; then
  echo "gpu_check: build failed (no gpu_tests target means $BUILD_DIR is not a CUDA build:" \
       "configure it with -DHALFCAF_USE_CUDA=ON)" >&2
  exit 1
fi
note "build: ok ($BUILD_DIR)"
mkdir -p "$LOG_DIR"

step "GPU tests (ctest -L gpu)"
test_log="$LOG_DIR/ctest.log"
# -V keeps every test's output in the log (the algorithm lines come from passing tests too);
# the console gets failures and ctest's own summary.
# shellcheck disable=SC2086  # CTEST_ARGS is a list of flags
GLOG_logtostderr=1 ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure -V ${CTEST_ARGS:-} \
  >"$test_log" 2>&1
ctest_rc=$?
grep -E 'Test +#[0-9]+: .*\*\*\*' "$test_log" | tail -n 60  # failed / not run / timeout
grep -E 'tests passed' "$test_log" | tail -n 1
sed -n '/The following tests FAILED/,$p' "$test_log"
skipped=$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$test_log" || true)
no_device=$(grep -cE '^[0-9]+: no CUDA device$' "$test_log" || true)
if [[ $ctest_rc -ne 0 ]]; then
  status=1
  note "GPU tests: FAILED (see $test_log)"
else
  note "GPU tests: passed ($(grep -E 'tests passed' "$test_log" | tail -n 1 | sed 's/^ *//'))"
fi
note "GPU tests: $skipped skipped"
if [[ "$no_device" -gt 0 ]]; then
  # Device tests skip themselves without a GPU; on the machine this script is for, that is a failure.
  status=1
  note "GPU tests: $no_device skipped for 'no CUDA device': the GPU is not visible (FAILED)"
fi

step "cuDNN algorithm choices (one line per op, shape and direction)"
algo_log="$LOG_DIR/cudnn_algos.log"
grep -o 'cuDNN conv algo: .*' "$test_log" | sort | uniq -c | sort -rn >"$algo_log" || true
if [[ -s "$algo_log" ]]; then
  head -n 80 "$algo_log"
  total=$(wc -l <"$algo_log")
  [[ $total -gt 80 ]] && echo "... ($total distinct lines in $algo_log)"
  fp16=$(grep -c 'X float16\[' "$algo_log" || true)
  fp16_tc=$(grep 'X float16\[' "$algo_log" | grep -c 'math CUDNN_TENSOR_OP_MATH' || true)
  fp32=$(grep -c 'X float\[' "$algo_log" || true)
  fp32_tc=$(grep 'X float\[' "$algo_log" | grep -c 'math CUDNN_TENSOR_OP' || true)
  note "cuDNN: float16 choices with tensor-op math: $fp16_tc of $fp16"
  note "cuDNN: float choices with tensor-op math: $fp32_tc of $fp32 (must be 0)"
  if [[ "$fp32_tc" -ne 0 ]]; then
    status=1
    echo "ERROR: a float convolution chose tensor-op math (TF32): the FP32 path must be FP32"
  fi
else
  echo "(no 'cuDNN conv algo' lines: were the conv tests skipped?)"
  note "cuDNN: no algorithm lines logged"
fi

step "LeNet on Fashion-MNIST, 1 epoch on the GPU: float32 and mixed precision"
D=/usr/share/datasets/fashion-mnist
if [[ -f "$D/train-images-idx3-ubyte.gz" ]]; then
  for dtype in float float16; do
    "$BUILD_DIR/bin/train_net" --device cuda --net models/lenet/lenet_train_net.pbtxt \
      --init_net models/lenet/lenet_init_net.pbtxt --train_data "$D/train-images-idx3-ubyte.gz" \
      --test_data "$D/t10k-images-idx3-ubyte.gz" --epochs 1 --log_every 200 --dtype $dtype \
      --summary_json "$LOG_DIR/lenet_$dtype.json" 2>&1 | tee "$LOG_DIR/lenet_$dtype.log"
    if [[ ${PIPESTATUS[0]} -eq 0 ]]; then
      acc=$(grep -o '"test_accuracy": [0-9.]*' "$LOG_DIR/lenet_$dtype.json" | cut -d' ' -f2)
      ips=$(grep -o '"images_per_sec": [0-9.]*' "$LOG_DIR/lenet_$dtype.json" | cut -d' ' -f2)
      note "LeNet $dtype on CUDA: test accuracy $acc, $ips images/s"
    else
      status=1
      note "LeNet $dtype on CUDA: FAILED (see $LOG_DIR/lenet_$dtype.log)"
    fi
  done
else
  note "LeNet: skipped ($D not found; apt-get install dataset-fashion-mnist)"
fi

step "ResNet-50 training step: FP32 (no tensor cores, no TF32) vs FP16 tensor-op math"
if "$BUILD_DIR/bin/benchmark" --model resnet50 --device cuda --precision fp32,fp16 \
    --batch_size "${BENCH_BATCHES:-32,64,128}" --order "${BENCH_ORDER:-NCHW}" --iters 20 --warmup 5 \
    --price_per_hour "${PRICE_PER_HOUR:-2.5}" --json "$LOG_DIR/resnet50.json" \
    --plot "$LOG_DIR/resnet50.svg" ${BENCH_COMPARE:+--compare pytorch} \
    2>&1 | tee "$LOG_DIR/resnet50.log"; then
  note "ResNet-50 benchmark: see $LOG_DIR/resnet50.log (json, svg beside it)"
else
  status=1
  note "ResNet-50 benchmark: FAILED (see $LOG_DIR/resnet50.log)"
fi

step "tensor-core kernels (nsys, when available)"
if command -v nsys >/dev/null 2>&1; then
  nsys profile -o "$LOG_DIR/resnet50_fp16" --force-overwrite true \
    "$BUILD_DIR/bin/benchmark" --model resnet50 --device cuda --precision fp16 --batch_size 64 \
    --iters 3 --warmup 1 >/dev/null 2>&1 &&
    nsys stats --report cuda_gpu_kern_sum "$LOG_DIR/resnet50_fp16.nsys-rep" 2>/dev/null |
    grep -Ei 'h884|h1688|hmma|tensorop|xmma|sm80|sm90' | head -5 | tee "$LOG_DIR/tc_kernels.txt"
  note "tensor-core kernel names found: $(wc -l < "$LOG_DIR/tc_kernels.txt" 2>/dev/null || echo 0)"
else
  note "nsys not found: tensor-core use shown by the cuDNN math-type lines above only"
fi

step "summary"
for line in "${summary[@]}"; do echo "  - $line"; done
echo "  logs: $LOG_DIR"
if [[ $status -eq 0 ]]; then echo "gpu_check: OK"; else echo "gpu_check: FAILED"; fi
exit $status
