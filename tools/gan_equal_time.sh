#!/usr/bin/env bash
# The founding document's comparison: the AC-GAN trained for the same wall time in several
# frameworks and precisions, then every run's samples scored the same way. Each run trains for
# --minutes of training (batch 64, Adam 2e-4, beta1 0.5, Fashion-MNIST), one after the other so
# they never share the CPU, then writes 1,000 samples per class; gan_score scores every run with
# the same LeNet (tools/gan_classifier.sh: GAN-test accuracy, Frechet distance in its features)
# and draws its grid. The table (steps, epochs, steps/s, scores, grid) goes to OUT/table.md and
# the terminal.
#   bash tools/gan_equal_time.sh                              # 20 minutes each, 3 runs
#   bash tools/gan_equal_time.sh --minutes 30 --out runs/equal_time_30
#   bash tools/gan_equal_time.sh --runs halfcaf_fp32,pytorch_bf16 --minutes 5
# Runs: halfcaf_fp32, halfcaf_bf16, halfcaf_fp16 (train_gan --dtype float / bfloat16 / float16)
# and pytorch_fp32, pytorch_bf16 (tools/peers/acgan_pytorch.py --train, CPU autocast for bf16).
# Default: halfcaf_fp32,halfcaf_bf16,pytorch_fp32. --threads N (0: all cores) for every run.
# PYTHON (default /usr/bin/python3, Debian's, with python3-torch) runs the peer.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=20
out=runs/equal_time
runs=halfcaf_fp32,halfcaf_bf16,pytorch_fp32
threads=0
seed=1
usage() { echo "usage: bash tools/gan_equal_time.sh [--minutes M] [--out DIR] [--runs LIST] [--threads N] [--seed S]" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --seed) seed=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "gan_equal_time.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]] && awk "BEGIN{exit !($minutes > 0)}" ||
  { echo "gan_equal_time.sh: --minutes must be a positive number, got '$minutes'" >&2; exit 2; }
IFS=, read -ra run_list <<< "$runs"
for r in "${run_list[@]}"; do
  case "$r" in
    halfcaf_fp32|halfcaf_bf16|halfcaf_fp16|pytorch_fp32|pytorch_bf16) ;;
    *) echo "gan_equal_time.sh: unknown run '$r' (halfcaf_fp32, halfcaf_bf16, halfcaf_fp16," \
            "pytorch_fp32, pytorch_bf16)" >&2; exit 2 ;;
  esac
done
[[ -x build/bin/train_gan && -x build/bin/gan_score ]] || bash tools/build.sh
bash tools/setup_deps.sh
D=/usr/share/datasets/fashion-mnist
source tools/gan_classifier.sh
mkdir -p "$out"

for r in "${run_list[@]}"; do
  dir="$out/$r"
  mkdir -p "$dir"
  echo "gan_equal_time.sh: $r for $minutes minutes of training -> $dir"
  case "$r" in
    halfcaf_*)
      case "$r" in
        halfcaf_fp32) dtype=float ;;
        halfcaf_bf16) dtype=bfloat16 ;;
        halfcaf_fp16) dtype=float16 ;;
      esac
      # --epochs high enough that the budget stops the run; no scoring during training (the
      # budget counts training only, but scoring would still lengthen the run).
      build/bin/train_gan --train_data "$D/train-images-idx3-ubyte.gz" --batch_size 64 \
        --epochs 1000 --time_budget "$minutes" --base_lr 2e-4 --beta1 0.5 --dtype "$dtype" \
        --seed "$seed" --threads "$threads" --out_dir "$dir" --grid_per_class 0 --log_every 500 \
        --log_csv "$dir/log.csv" --summary_json "$dir/summary.json" \
        --samples 1000 --samples_out "$dir/samples" 2>&1 | tee "$dir/train.log"
      ;;
    pytorch_*)
      "${PYTHON:-/usr/bin/python3}" tools/peers/acgan_pytorch.py --train --precision "${r#pytorch_}" \
        --data "$D/train-images-idx3-ubyte.gz" --batch_size 64 --time_budget "$minutes" \
        --seed "$seed" --threads "$threads" --log_every 500 \
        --samples 1000 --samples_out "$dir/samples" --summary_json "$dir/summary.json" \
        2>&1 | tee "$dir/train.log"
      ;;
  esac
  build/bin/gan_score --images "$dir/samples/images.npy" --labels "$dir/samples/labels.npy" \
    --classifier_net models/lenet/lenet_train_net.pbtxt \
    --classifier_params runs/classifier/checkpoint.pb \
    --grid "$dir/grid.png" --json "$dir/scores.json"
done

/usr/bin/python3 - "$out" "$minutes" "${run_list[@]}" <<'PY' | tee "$out/table.md"
import json, os, sys
out, minutes, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
print("AC-GAN after %s minutes of training each (batch 64, Fashion-MNIST), scored by gan_score:"
      % minutes)
print()
print("| run | steps | epochs | steps/s | GAN-test accuracy | Frechet distance | skipped steps |")
print("|---|---|---|---|---|---|---|")
for r in runs:
    s = json.load(open(os.path.join(out, r, "summary.json")))
    q = json.load(open(os.path.join(out, r, "scores.json")))
    if r.startswith("halfcaf"):
        steps, per_s = s["iterations"], s["iters_per_sec"]
        skipped = "%d / %d" % (s["d_skipped_steps"], s["g_skipped_steps"])
    else:
        steps, per_s, skipped = s["steps"], s["steps_per_sec"], "-"
    print("| %s | %d | %.2f | %.2f | %.3f | %.1f | %s |"
          % (r, steps, s["epochs"], per_s, q["gan_test_accuracy"], q["frechet_distance"], skipped))
print()
print("| " + " | ".join(runs) + " |")
print("|" + "---|" * len(runs))
print("| " + " | ".join("![%s](%s/grid.png)" % (r, r) for r in runs) + " |")
PY
