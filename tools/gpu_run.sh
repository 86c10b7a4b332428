#!/usr/bin/env bash
# Runs the GPU checks from an unpacked tools/gpu_bundle.sh archive (no build needed), in the order
# that keeps what matters most if time runs out:
#
#   1 preflight   driver / runtime / cuDNN / cuBLAS versions, devices, library paths, a smoke net;
#                 no device (or a cudaGetDeviceCount error) stops the run at once, exit 1
#   2 resnet50    ResNet-50 training step, NCHW, fp32 vs fp16: halfcaf (its table, JSON and CSV
#                 are written before the peer starts), then the PyTorch AMP peer under its own cap
#   3 gpu_tests   the GPU tests, one process per suite (tools/gpu_suites.py), each suite capped; a
#                 test skipped for "no CUDA device" counts as failed; the FP32-is-not-TF32 checks
#                 are named in the summary
#   4 resnet50    the same in NHWC (PyTorch channels_last)
#   5 lenet       LeNet on Fashion-MNIST (carried in the bundle) on the GPU: fp32, mixed
#                 precision, and two data-parallel replicas on the dag executor
#   6 acgan       the AC-GAN's training iteration (benchmark --model acgan), fp32 vs fp16, batch
#                 64 to 2048, D and G steps apart, cost per 1M images, then the PyTorch AMP peer
#   7 bf16        the BF16 recipe on the GPU (compute capability 8.0 or newer): LeNet, then a
#                 ResNet-50 NCHW training step in bf16 (halfcaf alone); last, so the run's budget
#                 may cut it short
#
# Every step runs under `timeout` with its own cap, never past the whole run's budget; the plan
# (steps, caps, commands) is printed first. Logs are written into RESULTS_DIR as the steps run.
# RESULTS_DIR ends up with at most 7 files (a device run brings back 8): summary.txt,
# preflight.txt, resnet50.txt (both layouts), resnet50.json (NCHW), gpu_tests.txt, lenet.txt (and
# the AC-GAN sweep), extras.tar.gz (NHWC and AC-GAN JSON, CSVs, SVG, LeNet summaries, the cuDNN
# algorithm lines).
#
# Usage: bash halfcaf_gpu/tools/gpu_run.sh [--dry_run] [--bin DIR] [RESULTS_DIR]
#   --dry_run   print the plan, the caps and the commands; run nothing (works without a GPU)
#   --bin DIR   the binaries (default: the bundle's bin/); e.g. build/bin of a CUDA build
# Environment (seconds): BUDGET_S (470), PREFLIGHT_S (45), R50_S (150), PEER_S (70 of R50_S; 0: no peer),
#   TESTS_S (120), SUITE_S (45 per suite), NHWC_S (60), LENET_S (20 per run), ACGAN_S (90),
#   BF16_S (40); ACGAN_BATCHES (64,...,2048);
#   BENCH_BATCHES (32,64,128), BENCH_BATCHES_NHWC (64,128), BENCH_ITERS (20), GTEST_FILTER (suites).
# Exit status: 0 only if every step passed; 1 when the preflight finds no device.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DRY=0
BIN=""
RES=""
while (($#)); do
  case "$1" in
    --dry_run) DRY=1 ;;
    --bin) BIN=$2; shift ;;
    --bin=*) BIN=${1#--bin=} ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    -*) echo "gpu_run: unknown option $1" >&2; exit 2 ;;
    *) RES=$1 ;;
  esac
  shift
done
BIN=$(cd "${BIN:-$ROOT/bin}" 2>/dev/null && pwd) || { echo "gpu_run: no binaries folder ${BIN:-$ROOT/bin}" >&2; exit 2; }
RES=${RES:-$ROOT/results}
mkdir -p "$RES"
RES=$(cd "$RES" && pwd)
WORK=$(mktemp -d)
SUMMARY="$RES/summary.txt"
: >"$SUMMARY"
START=$(date +%s)
BUDGET=${BUDGET_S:-470}
PREFLIGHT_S=${PREFLIGHT_S:-45} R50_S=${R50_S:-150} PEER_S=${PEER_S:-70} TESTS_S=${TESTS_S:-120}
SUITE_S=${SUITE_S:-45} NHWC_S=${NHWC_S:-60} LENET_S=${LENET_S:-20} BF16_S=${BF16_S:-40}
ACGAN_S=${ACGAN_S:-90}
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
  if ((DRY)); then
    printf '  %-26s cap %4ss: %s\n' "$name" "$limit" "$*" | tee -a "$SUMMARY"
    return 0
  fi
  local t0 rc
  t0=$(date +%s)
  echo "## $name: $* (limit ${limit}s)" >>"$log"
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1
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
pack_extras() { ((DRY)) || tar -C "$WORK" -czf "$RES/extras.tar.gz" . 2>/dev/null || true; }
trap pack_extras EXIT

# ---- libraries: cuDNN 9 and the CUDA 13 runtime libraries may live only in a Python environment
# (PyTorch's nvidia-* wheels: site-packages/nvidia/cudnn/lib, site-packages/nvidia/cu13/lib) or
# in a CUDA toolkit that ldconfig does not know. Look in those places first; search the disk
# (bounded in time) only for what is still missing. The path is set for halfcaf's binaries alone
# (hc): the bundle's lib/ holds Debian's libstdc++ / libgcc_s / libz, which must not come before
# the system's for Python and PyTorch.
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
if ((!DRY)); then
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
fi
HC_LD_PATH="$ROOT/lib${extra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# "${hc[@]}" CMD...: a halfcaf binary with the bundle's libraries; the PyTorch peer that
# `benchmark` starts gets the caller's LD_LIBRARY_PATH back (HALFCAF_PEER_LD_LIBRARY_PATH).
hc=(env LD_LIBRARY_PATH="$HC_LD_PATH" HALFCAF_PEER_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
    GLOG_logtostderr=1 HALFCAF_SOURCE_DIR="$ROOT")
cd "$ROOT" || exit 1

# ---- the plan -------------------------------------------------------------------------------------
batches=${BENCH_BATCHES:-32,64,128}
batches_nhwc=${BENCH_BATCHES_NHWC:-64,128}
iters=${BENCH_ITERS:-20}
say "== gpu_run plan: budget ${BUDGET}s; caps: preflight ${PREFLIGHT_S}s, resnet50 NCHW ${R50_S}s" \
    "(peer ${PEER_S}s of it), gpu tests ${TESTS_S}s (${SUITE_S}s a suite), resnet50 NHWC" \
    "${NHWC_S}s, lenet ${LENET_S}s x 5, resnet50 bf16 ${BF16_S}s, acgan ${ACGAN_S}s; total of" \
    "caps $((PREFLIGHT_S + R50_S + TESTS_S + NHWC_S + 5 * LENET_S + BF16_S + ACGAN_S))s"
((DRY)) && say "== dry run: the commands, nothing is run"

# ---- 1 preflight ------------------------------------------------------------------------------------
say "== 1 preflight"
if ((!DRY)); then
  if [[ ! -x "$BIN/gpu_preflight" ]]; then
    say "gpu_run: STOP: $BIN/gpu_preflight is missing: this is not a CUDA build of halfcaf"
    exit 1
  fi
  { nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader; } \
    >>"$SUMMARY" 2>/dev/null || say "nvidia-smi: not available or failed"
  say "LD_LIBRARY_PATH for halfcaf: $HC_LD_PATH"
  ((${#missing[@]})) && say "NOT FOUND anywhere: ${missing[*]}"
  "${hc[@]}" ldd "$BIN/gpu_preflight" 2>&1 | grep -E 'libcudnn|libcublas|libcudart|not found' |
    sed 's/^[[:space:]]*/  ldd: /' | tee -a "$SUMMARY"
fi
run_step "preflight" "$RES/preflight.txt" "$(step_limit "$PREFLIGHT_S")" "${hc[@]}" "$BIN/gpu_preflight"
pre=$?
if ((!DRY)); then
  grep -E '^(driver|runtime|cuDNN|cuBLAS|device [0-9]|smoke|WARNING)' "$RES/preflight.txt" |
    tee -a "$SUMMARY"
  if ((pre != 0 && pre != 3)); then
    why=$(grep -m1 'no CUDA device' "$RES/preflight.txt")
    say "gpu_run: STOP: ${why:-the preflight failed (exit $pre)}; nothing else is run"
    exit 1
  fi
  ((pre == 3)) && say "preflight: the smoke net FAILED on the GPU; going on to find out where"
fi

# ---- the PyTorch peer ---------------------------------------------------------------------------
compare=()
if ((PEER_S <= 0)); then
  say "PyTorch peer: not run (PEER_S=$PEER_S)"
elif ((DRY)); then
  compare=(--compare pytorch --python python3 --peer_timeout_s "$PEER_S")
elif torch_info=$(timeout 60 python3 -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1); then
  say "PyTorch peer: $(echo "$torch_info" | tail -1)"
  compare=(--compare pytorch --python python3 --peer_timeout_s "$PEER_S")
else
  say "PyTorch peer: NOT RUN: 'import torch, torchvision' failed: $(echo "$torch_info" | tail -1)"
fi

# ---- 2 ResNet-50 NCHW ----------------------------------------------------------------------------
say "== 2 ResNet-50 training step, NCHW, fp32 vs fp16, then the PyTorch peer"
run_step "resnet50_nchw" "$RES/resnet50.txt" "$(step_limit "$R50_S")" \
  "${hc[@]}" "$BIN/benchmark" --model resnet50 --device cuda --precision fp32,fp16 \
  --batch_size "$batches" --iters "$iters" --warmup 5 \
  --json "$RES/resnet50.json" --csv "$WORK/resnet50.csv" --plot "$WORK/resnet50.svg" \
  "${compare[@]}"
((DRY)) || grep -A12 '^halfcaf benchmark: resnet50, train, NCHW' "$RES/resnet50.txt" | tail -13 |
  tee -a "$SUMMARY"
pack_extras

# ---- 3 GPU tests, one process per suite ---------------------------------------------------------
say "== 3 GPU tests, one process per suite"
run_step "gpu_tests" "$RES/gpu_tests.txt" "$(step_limit "$TESTS_S")" \
  env HALFCAF_SOURCE_DIR="$ROOT" GLOG_logtostderr=1 python3 "$ROOT/tools/gpu_suites.py" --binary "$BIN/gpu_tests" --device_present \
  --suite_timeout "$SUITE_S" --budget "$(($(step_limit "$TESTS_S") - 5))" \
  --filter "${GTEST_FILTER:-*}" --ld_library_path "$HC_LD_PATH" --log "$WORK/gpu_tests_raw.txt" \
  --highlight ConvCudnnTest.Fp32IsNotTf32 FCGpuTest.Fp32IsNotTf32
if ((!DRY)); then
  sed -n '/^suite /,$p' "$RES/gpu_tests.txt" | grep -vE '^## ' >>"$SUMMARY"
  grep -E '^(check |[0-9]+ passed)' "$RES/gpu_tests.txt"
  grep -E '^\[  FAILED  \] .*\(' "$WORK/gpu_tests_raw.txt" | head -40 | tee -a "$SUMMARY"
  cat "$WORK/gpu_tests_raw.txt" >>"$RES/gpu_tests.txt"
fi
pack_extras

# ---- 4 ResNet-50 NHWC ------------------------------------------------------------------------------
say "== 4 ResNet-50 training step, NHWC (channels_last), fp32 vs fp16"
nhwc_compare=()
((${#compare[@]})) && nhwc_compare=(--compare pytorch --python python3 --peer_timeout_s "$((NHWC_S / 2))")
run_step "resnet50_nhwc" "$RES/resnet50.txt" "$(step_limit "$NHWC_S")" \
  "${hc[@]}" "$BIN/benchmark" --model resnet50 --device cuda --precision fp32,fp16 --order NHWC \
  --batch_size "$batches_nhwc" --iters "$iters" --warmup 5 \
  --json "$WORK/resnet50_nhwc.json" --csv "$WORK/resnet50_nhwc.csv" "${nhwc_compare[@]}"
((DRY)) || grep -A12 '^halfcaf benchmark: resnet50, train, NHWC' "$RES/resnet50.txt" | tail -13 |
  tee -a "$SUMMARY"
pack_extras

# ---- 5 LeNet on Fashion-MNIST -------------------------------------------------------------------
say "== 5 LeNet on the GPU"
FMNIST=$ROOT/fashion-mnist  # the bundle's; else Debian's dataset-fashion-mnist
[[ -d "$FMNIST" ]] || FMNIST=/usr/share/datasets/fashion-mnist
if [[ -f "$FMNIST/train-images-idx3-ubyte.gz" ]]; then
  data=(--train_data "$FMNIST/train-images-idx3-ubyte.gz"
        --test_data "$FMNIST/t10k-images-idx3-ubyte.gz" --epochs 1)
else
  say "lenet: no Fashion-MNIST (bundle or /usr/share/datasets): synthetic data (accuracy means nothing)"
  data=(--data_format synthetic --synthetic_shape 1,28,28 --iters 500)
fi
lenet() {  # lenet NAME ARGS...
  local name=$1
  shift
  run_step "$name" "$RES/lenet.txt" "$(step_limit "$LENET_S")" \
    "${hc[@]}" "$BIN/train_net" --device cuda --net models/lenet/lenet_train_net.pbtxt \
    --init_net models/lenet/lenet_init_net.pbtxt "${data[@]}" --log_every 100 \
    --summary_json "$WORK/$name.json" "$@"
  if ((!DRY)) && [[ -f "$WORK/$name.json" ]]; then
    say "  $name: $(tr -d '\n' <"$WORK/$name.json" |
      grep -oE '"(test_accuracy|images_per_sec|final_loss|skipped_steps)": [0-9.e+-]*' |
      tr '\n' ' ')"
  fi
}
lenet lenet_float --dtype float
lenet lenet_float16 --dtype float16
# Data parallel without NCCL: two replicas on this GPU, gradients summed by Copy + Sum, on the dag
# executor (as with several GPUs: its workers take turns on the GPU's stream and handles).
lenet lenet_float16_2replicas --dtype float16 --replicas 2 --net_type dag
# Two processes on this GPU, FP16 gradients exchanged over Gloo through pinned host memory
# (distributed/gradient_exchange: CUDA staging); rank 0 writes the summary.
run_step lenet_float16_2processes "$RES/lenet.txt" "$(step_limit "$LENET_S")" \
  bash -c 'rv=$(mktemp -d); rc=0; "$@" --shard_id 1 --rendezvous "$rv" & p=$!
           "$@" --shard_id 0 --rendezvous "$rv" || rc=$?; wait $p || rc=$?; rm -rf "$rv"; exit $rc' \
  _ "${hc[@]}" "$BIN/train_net" --device cuda --net models/lenet/lenet_train_net.pbtxt \
  --init_net models/lenet/lenet_init_net.pbtxt "${data[@]}" --log_every 100 --dtype float16 \
  --num_shards 2 --gloo_interface lo --gloo_timeout_s 15 \
  --summary_json "$WORK/lenet_float16_2processes.json"
if ((!DRY)) && [[ -f "$WORK/lenet_float16_2processes.json" ]]; then
  say "  lenet_float16_2processes: $(tr -d '\n' <"$WORK/lenet_float16_2processes.json" |
    grep -oE '"(test_accuracy|images_per_sec|exchange_ms_per_step|exposed_ms_per_step)": [0-9.e+-]*' |
    tr '\n' ' ')"
fi

# ---- 6 the AC-GAN sweep --------------------------------------------------------------------------
# The founding document's benchmark: the AC-GAN's training iteration (discriminator and generator
# steps timed apart) in FP32 (no TF32) and FP16 tensor-op math, batch 64 to 2048, cost per 1M.
say "== 6 AC-GAN iteration, fp32 vs fp16, batch 64..2048, then the PyTorch peer"
gan_compare=()
((${#compare[@]})) && gan_compare=(--compare pytorch --python python3 --peer_timeout_s "$((ACGAN_S / 2))")
run_step "acgan" "$RES/lenet.txt" "$(step_limit "$ACGAN_S")" \
  "${hc[@]}" "$BIN/benchmark" --model acgan --device cuda --precision fp32,fp16 \
  --batch_size "${ACGAN_BATCHES:-64,128,256,512,1024,2048}" --iters 20 --warmup 5 \
  --json "$WORK/acgan.json" --csv "$WORK/acgan.csv" "${gan_compare[@]}"
((DRY)) || grep -A13 '^halfcaf benchmark: acgan, train' "$RES/lenet.txt" | tail -14 |
  tee -a "$SUMMARY"
pack_extras

# ---- 7 BF16 -------------------------------------------------------------------------------------
say "== 7 the BF16 recipe on the GPU: LeNet, then ResNet-50 NCHW (halfcaf alone)"
lenet lenet_bfloat16 --dtype bfloat16
run_step "resnet50_bf16" "$RES/resnet50.txt" "$(step_limit "$BF16_S")" \
  "${hc[@]}" "$BIN/benchmark" --model resnet50 --device cuda --precision bf16 \
  --batch_size "${BENCH_BATCHES_BF16:-64}" --iters 10 --warmup 3 --json "$WORK/resnet50_bf16.json"
((DRY)) || grep -A4 '^halfcaf benchmark: resnet50, train, NCHW' "$RES/resnet50.txt" | tail -5 |
  tee -a "$SUMMARY"
pack_extras

# The math type each convolution ran with, as cuDNN reported it for the algorithm it ran: FP32
# (the "Pascal path") must never use tensor-op math (TF32); FP16 should.
if ((!DRY)); then
  cat "$RES"/*.txt "$WORK"/*.txt 2>/dev/null | grep -oE "cuDNN conv algo: .*" | sort | uniq -c |
    sort -rn >"$WORK/cudnn_algos.txt"
  fp16=$(grep -c 'X float16\[' "$WORK/cudnn_algos.txt")
  fp16_tc=$(grep 'X float16\[' "$WORK/cudnn_algos.txt" | grep -c 'math CUDNN_TENSOR_OP')
  bf16=$(grep -c 'X bfloat16\[' "$WORK/cudnn_algos.txt")
  bf16_tc=$(grep 'X bfloat16\[' "$WORK/cudnn_algos.txt" | grep -c 'math CUDNN_TENSOR_OP')
  say "cuDNN: bfloat16 convolutions with tensor-op math: $bf16_tc of $bf16 distinct choices"
  fp32=$(grep -c 'X float\[' "$WORK/cudnn_algos.txt")
  fp32_tc=$(grep 'X float\[' "$WORK/cudnn_algos.txt" | grep -c 'math CUDNN_TENSOR_OP')
  say "cuDNN: float16 convolutions with tensor-op math: $fp16_tc of $fp16 distinct choices;" \
      "float with tensor-op math (TF32): $fp32_tc of $fp32 (must be 0)"
  if ((fp32_tc > 0)); then
    status=1
    say "ERROR: a float convolution ran with tensor-op math (TF32): the FP32 path must be FP32"
  fi
  ((fp16 + fp32 == 0)) && say "cuDNN: no 'cuDNN conv algo' lines were logged"
fi
pack_extras
say "gpu_run: status $status after $(elapsed)s, results in $RES"
exit $status
