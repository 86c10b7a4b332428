#!/usr/bin/env bash
# The README's main job: trains LeNet on Fashion-MNIST (Debian's dataset-fashion-mnist) on the
# CPU in mixed precision (FP16 activations and gradients, FP32 master weights, dynamic loss
# scaling) for 3 epochs, then evaluates the test set. Extra arguments go to train_net, e.g.
#   bash tools/train.sh --dtype float          # plain FP32 training
#   bash tools/train.sh --epochs 1 --log_every 100
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bin/train_net ]] || bash tools/build.sh
bash tools/setup_deps.sh
D=/usr/share/datasets/fashion-mnist
mkdir -p runs/lenet
exec build/bin/train_net \
  --net models/lenet/lenet_train_net.pbtxt --init_net models/lenet/lenet_init_net.pbtxt \
  --train_data "$D/train-images-idx3-ubyte.gz" --test_data "$D/t10k-images-idx3-ubyte.gz" \
  --batch_size 64 --epochs 3 --base_lr 0.01 --momentum 0.9 \
  --dtype float16 --loss_scale dynamic \
  --log_every 200 --test_every 1000 \
  --checkpoint_dir runs/lenet --checkpoint_every 500 \
  --log_csv runs/lenet/log.csv --summary_json runs/lenet/summary.json "$@"
