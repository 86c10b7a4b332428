#!/usr/bin/env bash
# The README's main job: trains LeNet on Fashion-MNIST (Debian's dataset-fashion-mnist) on the
# CPU in mixed precision (FP16 activations and gradients, FP32 master weights, dynamic loss
# scaling) for 3 epochs, then evaluates the test set. Extra arguments go to train_net, e.g.
#   bash tools/train.sh --dtype float          # plain FP32 training
#   bash tools/train.sh --epochs 1 --log_every 100
#   bash tools/train.sh --optimizer adam         # Adam, rate 0.002 decaying along a cosine
# The learning rate (and schedule) defaults to the optimizer's: momentum SGD 0.01; adam / adamw
# 0.002 with a cosine decay over the run; adagrad 0.01; rmsprop 0.001; adadelta 1.0.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bin/train_net ]] || bash tools/build.sh
bash tools/setup_deps.sh
D=/usr/share/datasets/fashion-mnist
optimizer=momentum
for ((i = 1; i <= $#; i++)); do
  case "${!i}" in
    --optimizer=*) optimizer="${!i#--optimizer=}" ;;
    --optimizer) j=$((i + 1)); optimizer="${!j:-}" ;;
  esac
done
case "$optimizer" in
  adam|adamw) rate=(--base_lr 0.002 --lr_policy cosine) ;;
  rmsprop) rate=(--base_lr 0.001) ;;
  adadelta) rate=(--base_lr 1.0) ;;
  *) rate=(--base_lr 0.01) ;;
esac
mkdir -p runs/lenet
exec build/bin/train_net \
  --net models/lenet/lenet_train_net.pbtxt --init_net models/lenet/lenet_init_net.pbtxt \
  --train_data "$D/train-images-idx3-ubyte.gz" --test_data "$D/t10k-images-idx3-ubyte.gz" \
  --batch_size 64 --epochs 3 "${rate[@]}" \
  --dtype float16 --loss_scale dynamic \
  --log_every 200 --test_every 1000 \
  --checkpoint_dir runs/lenet --checkpoint_every 500 \
  --log_csv runs/lenet/log.csv --summary_json runs/lenet/summary.json "$@"
