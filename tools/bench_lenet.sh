#!/usr/bin/env bash
# LeNet on Fashion-MNIST, FP32 training images/s: halfcaf's train_net and the PyTorch peer in one
# run, same net, batch, optimiser and thread count. Usage: tools/bench_lenet.sh [iters] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-500}
THREADS=${2:-2}
D=/usr/share/datasets/fashion-mnist
[[ -x build/bin/train_net ]] || bash tools/build.sh
HALFCAF_PEER=1 bash tools/setup_deps.sh
OUT=$(mktemp -d)
for dtype in float float16; do
  build/bin/train_net --net models/lenet/lenet_train_net.pbtxt \
    --init_net models/lenet/lenet_init_net.pbtxt --train_data $D/train-images-idx3-ubyte.gz \
    --iters "$ITERS" --batch_size 64 --threads "$THREADS" --log_every "$ITERS" --dtype $dtype \
    --summary_json "$OUT/halfcaf_$dtype.json" > /dev/null
done
OMP_NUM_THREADS=$THREADS /usr/bin/python3 tools/peers/lenet_pytorch.py \
  --train_data $D/train-images-idx3-ubyte.gz --iters "$ITERS" --batch_size 64 \
  --threads "$THREADS" > "$OUT/pytorch.json"
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
h32 = json.load(open(f"{d}/halfcaf_float.json"))
h16 = json.load(open(f"{d}/halfcaf_float16.json"))
pt = json.load(open(f"{d}/pytorch.json"))
print(f"{'':28s}{'images/s':>10s}{'final loss':>12s}")
print(f"{'halfcaf fp32':28s}{h32['images_per_sec']:10.0f}{h32['final_loss']:12.4f}")
print(f"{'halfcaf fp16 (mixed, CPU)':28s}{h16['images_per_sec']:10.0f}{h16['final_loss']:12.4f}")
print(f"{pt['framework'] + ' fp32':28s}{pt['images_per_sec']:10.0f}{pt['final_loss']:12.4f}")
print(f"halfcaf fp32 / pytorch fp32 = {h32['images_per_sec'] / pt['images_per_sec']:.2f}x")
PY
