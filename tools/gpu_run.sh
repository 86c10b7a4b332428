#!/usr/bin/env bash
# Runs the GPU checks from an unpacked tools/gpu_bundle.sh archive (no build needed): the GPU
# tests, LeNet training on the GPU in FP32 and mixed precision (and with two data-parallel
# replicas), and the ResNet-50 FP32-vs-FP16
# benchmark with the PyTorch peer when torch is importable. Results go to RESULTS_DIR.
#
# Usage: bash halfcaf_gpu/tools/gpu_run.sh [RESULTS_DIR]
#   Environment: BENCH_BATCHES (default 32,64,128), BENCH_BATCHES_NHWC (default 64,128; the NHWC
#                sweep runs when more than 60 s of the budget is left), BENCH_ITERS (default 20), GTEST_FILTER,
#                BUDGET_S (whole run, default 450 s), TESTS_S (GPU tests, default 240 s),
#                LENET_S (each LeNet run, default 60 s); the benchmark gets what is left (<= 300 s).
#
# Every step runs under `timeout`, so a hang costs one step, not the run, and each step's log is
# written straight into RESULTS_DIR as it runs. RESULTS_DIR ends up with at most 7 files (a device
# run brings back 8): summary.txt (device, libraries, every step's exit status and key numbers),
# gpu_tests.txt, lenet.txt, resnet50.txt, resnet50.json, cudnn_algos.txt and extras.tar.gz (the
# LeNet summaries, the benchmark's CSV and SVG). Exit status: 0 only if every step passed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RES=${1:-$ROOT/results}
mkdir -p "$RES"
RES=$(cd "$RES" && pwd)
WORK=$(mktemp -d)
SUMMARY="$RES/summary.txt"
: >"$SUMMARY"
START=$(date +%s)
BUDGET=${BUDGET_S:-450}
status=0

say() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(($(date +%s) - START)); }
# Seconds a step may take: its own cap, but never past the whole run's budget (at least 10 s).
step_limit() {
  local cap=$1 left=$((BUDGET - $(elapsed)))
  ((left < 10)) && left=10
  ((cap < left)) && echo "$cap" || echo "$left"
}
# run_step NAME LOG SECONDS CMD...: runs CMD under timeout, appending stdout+stderr to LOG.
run_step() {
  local name=$1 log=$2 limit=$3
  shift 3
  local t0 rc
  t0=$(date +%s)
  echo "## $name: $* (limit ${limit}s)" >>"$log"
  timeout -k 15 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  local verdict="ok"
  if ((rc == 124 || rc == 137)); then
    verdict="TIMEOUT after ${limit}s"
  elif ((rc != 0)); then
    verdict="FAILED (exit $rc)"
  fi
  ((rc != 0)) && status=1
  echo "## $name: $verdict in $(($(date +%s) - t0))s" >>"$log"
  say "$name: $verdict ($(($(date +%s) - t0))s; log $(basename "$log"))"
  return $rc
}
pack_extras() { tar -C "$WORK" -czf "$RES/extras.tar.gz" . 2>/dev/null || true; }
trap pack_extras EXIT

# ---- libraries: cuDNN 9 and the CUDA 13 runtime libraries may live only in a Python environment
# (PyTorch's nvidia-* wheels: site-packages/nvidia/cudnn/lib, site-packages/nvidia/cu13/lib) or
# in a CUDA toolkit that ldconfig does not know. Look in those places first; search the disk
# (bounded in time) only for what is still missing.
libs=(libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libcudart.so.13)
dirs=()
for py in python3 /opt/torch/.venv/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  sp=$("$py" -c 'import site, sysconfig; print("\n".join([sysconfig.get_paths()["purelib"]] + site.getsitepackages()))' 2>/dev/null) || continue
  while read -r d; do
    [[ -d "$d/nvidia" ]] && for l in "$d"/nvidia/*/lib "$d"/nvidia/*/*/lib; do
      [[ -d "$l" ]] && dirs+=("$l")
    done
  done <<<"$sp"
done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64 \
         /usr/lib/x86_64-linux-gnu; do
  [[ -d "$d" ]] && dirs+=("$d")
done
extra=""
missing=()
for lib in "${libs[@]}"; do
  ldconfig -p 2>/dev/null | grep -q "$lib " && continue
  hit=""
  for d in "${dirs[@]}"; do
    if [[ -e "$d/$lib" ]]; then hit="$d/$lib"; break; fi
  done
  if [[ -z "$hit" ]]; then
    hit=$(timeout 60 find /usr /opt /root /home -xdev -name "$lib" 2>/dev/null | head -1)
  fi
  if [[ -n "$hit" ]]; then
    case ":$extra:" in *":$(dirname "$hit"):"*) ;; *) extra="$extra:$(dirname "$hit")" ;; esac
  else
    missing+=("$lib")
  fi
done
export LD_LIBRARY_PATH="$ROOT/lib${extra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GLOG_logtostderr=1  # the cuDNN algorithm lines are LOG(INFO)
cd "$ROOT" || exit 1

say "== device"
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader \
  >>"$SUMMARY" 2>&1 || say "nvidia-smi failed"
say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
((${#missing[@]})) && say "NOT FOUND anywhere: ${missing[*]}"
unresolved=$(ldd bin/gpu_tests 2>&1 | grep 'not found' | sort -u)
if [[ -n "$unresolved" ]]; then
  say "bin/gpu_tests has unresolved libraries:"
  say "$unresolved"
fi
say "(library search took $(elapsed)s)"

say "== gpu tests"
run_step "gpu_tests" "$RES/gpu_tests.txt" "$(step_limit "${TESTS_S:-240}")" \
  bin/gpu_tests --gtest_filter="${GTEST_FILTER:-*}"
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$RES/gpu_tests.txt" | tee -a "$SUMMARY"
grep -E '^\[  FAILED  \] .*\(' "$RES/gpu_tests.txt" | head -40 | tee -a "$SUMMARY"
grep -oE "cuDNN conv algo: .*" "$RES/gpu_tests.txt" | sort | uniq -c | sort -rn \
  >"$RES/cudnn_algos.txt" || true

say "== LeNet on the GPU"
if [[ -d "$ROOT/fashion-mnist" ]]; then
  data=(--train_data "$ROOT/fashion-mnist/train-images-idx3-ubyte.gz"
        --test_data "$ROOT/fashion-mnist/t10k-images-idx3-ubyte.gz" --epochs 1)
else
  data=(--data_format synthetic --synthetic_shape 1,28,28 --iters 500)
fi
for dtype in float float16; do
  run_step "lenet_$dtype" "$RES/lenet.txt" "$(step_limit "${LENET_S:-60}")" \
    bin/train_net --device cuda --net models/lenet/lenet_train_net.pbtxt \
    --init_net models/lenet/lenet_init_net.pbtxt "${data[@]}" --log_every 100 --dtype $dtype \
    --summary_json "$WORK/lenet_$dtype.json"
  if [[ -f "$WORK/lenet_$dtype.json" ]]; then
    say "  lenet_$dtype: $(tr -d '\n' <"$WORK/lenet_$dtype.json" |
      grep -oE '"(test_accuracy|images_per_sec|final_loss|skipped_steps)": [0-9.e+-]*' |
      tr '\n' ' ')"
  fi
done
# Data parallel without NCCL: two replicas on this GPU, gradients summed by Copy + Sum, on the dag
# executor (as with several GPUs: its workers take turns on the GPU's stream and handles).
run_step "lenet_float16_2replicas" "$RES/lenet.txt" "$(step_limit "${LENET_S:-60}")" \
  bin/train_net --device cuda --replicas 2 --net_type dag --net models/lenet/lenet_train_net.pbtxt \
  --init_net models/lenet/lenet_init_net.pbtxt "${data[@]}" --log_every 100 --dtype float16 \
  --summary_json "$WORK/lenet_float16_2replicas.json"
[[ -f "$WORK/lenet_float16_2replicas.json" ]] && say "  lenet_float16_2replicas: $(tr -d '\n' \
  <"$WORK/lenet_float16_2replicas.json" | grep -oE '"(test_accuracy|images_per_sec)": [0-9.e+-]*' |
  tr '\n' ' ')"
pack_extras

say "== ResNet-50 fp32 vs fp16"
compare=()
python3 -c "import torch, torchvision" 2>/dev/null && compare=(--compare pytorch --python python3)
run_step "resnet50" "$RES/resnet50.txt" "$(step_limit 300)" \
  bin/benchmark --model resnet50 --device cuda --precision fp32,fp16 \
  --batch_size "${BENCH_BATCHES:-32,64,128}" --iters "${BENCH_ITERS:-20}" --warmup 5 \
  --json "$RES/resnet50.json" --csv "$WORK/resnet50.csv" --plot "$WORK/resnet50.svg" \
  "${compare[@]}"
grep -A12 '^halfcaf benchmark:' "$RES/resnet50.txt" | tee -a "$SUMMARY"
pack_extras

# NHWC (PyTorch channels_last) with what is left of the budget; log appended to resnet50.txt.
if ((BUDGET - $(elapsed) > 60)); then
  say "== ResNet-50 fp32 vs fp16, NHWC"
  run_step "resnet50_nhwc" "$RES/resnet50.txt" "$(step_limit 300)" \
    bin/benchmark --model resnet50 --device cuda --precision fp32,fp16 --order NHWC \
    --batch_size "${BENCH_BATCHES_NHWC:-64,128}" --iters "${BENCH_ITERS:-20}" --warmup 5 \
    --json "$WORK/resnet50_nhwc.json" --csv "$WORK/resnet50_nhwc.csv" "${compare[@]}"
  grep -A12 '^halfcaf benchmark: resnet50, train, NHWC' "$RES/resnet50.txt" | tee -a "$SUMMARY"
  pack_extras
else
  say "resnet50_nhwc: skipped (budget spent; rerun with BENCH_BATCHES_NHWC and a larger BUDGET_S)"
fi
say "gpu_run: status $status after $(elapsed)s, results in $RES"
exit $status
