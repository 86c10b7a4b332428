#!/usr/bin/env bash
# Runs the GPU checks from an unpacked tools/gpu_bundle.sh archive (no build needed): the GPU
# tests, LeNet training on the GPU in FP32 and mixed precision, and the ResNet-50 FP32-vs-FP16
# benchmark with the PyTorch peer when torch is importable. Results go to RESULTS_DIR.
#
# Usage: bash halfcaf_gpu/tools/gpu_run.sh [RESULTS_DIR]
#   Environment: BENCH_BATCHES (default 32,64,128), BENCH_ITERS (default 20), GTEST_FILTER.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RES=${1:-$ROOT/results}
mkdir -p "$RES"
# cuDNN and cuBLAS may live only inside a Python environment (PyTorch's wheels).
extra=""
for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libcudart.so.13; do
  if ! ldconfig -p 2>/dev/null | grep -q "$lib"; then
    hit=$(find / -xdev -name "$lib" 2>/dev/null | head -1)
    [[ -n "$hit" ]] && extra="$extra:$(dirname "$hit")"
  fi
done
export LD_LIBRARY_PATH="$ROOT/lib${extra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$ROOT"
status=0
{
  echo "== device"; nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader 2>&1
  echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} | tee "$RES/device.txt"

echo "== gpu tests"
bin/gpu_tests --gtest_filter="${GTEST_FILTER:-*}" > "$RES/gpu_tests.txt" 2>&1 || status=1
tail -5 "$RES/gpu_tests.txt"
grep -E "cuDNN conv algo" "$RES/gpu_tests.txt" | sort | uniq -c | sort -rn | head -20 > "$RES/cudnn_algos.txt"

echo "== LeNet on the GPU"
if [[ -d "$ROOT/fashion-mnist" ]]; then
  data=(--train_data "$ROOT/fashion-mnist/train-images-idx3-ubyte.gz"
        --test_data "$ROOT/fashion-mnist/t10k-images-idx3-ubyte.gz" --epochs 1)
else
  data=(--data_format synthetic --synthetic_shape 1,28,28 --iters 500)
fi
for dtype in float float16; do
  bin/train_net --device cuda --net models/lenet/lenet_train_net.pbtxt \
    --init_net models/lenet/lenet_init_net.pbtxt "${data[@]}" --log_every 100 --dtype $dtype \
    --summary_json "$RES/lenet_$dtype.json" > "$RES/lenet_$dtype.txt" 2>&1 || status=1
  tail -3 "$RES/lenet_$dtype.txt"
done

echo "== ResNet-50 fp32 vs fp16"
compare=""
python3 -c "import torch, torchvision" 2>/dev/null && compare="--compare pytorch --python python3"
bin/benchmark --model resnet50 --device cuda --precision fp32,fp16 \
  --batch_size "${BENCH_BATCHES:-32,64,128}" --iters "${BENCH_ITERS:-20}" --warmup 5 \
  --json "$RES/resnet50.json" --csv "$RES/resnet50.csv" --plot "$RES/resnet50.svg" $compare \
  > "$RES/resnet50.txt" 2>&1 || status=1
tail -12 "$RES/resnet50.txt"
echo "gpu_run: status $status, results in $RES"
exit $status
