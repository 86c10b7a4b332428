#!/usr/bin/env bash
# The AC-GAN benchmark's training run: trains the AC-GAN (models/acgan.h) on Fashion-MNIST
# (Debian's dataset-fashion-mnist) with Adam (lr 2e-4, beta1 0.5), batch 64, for 5 epochs, writing
# a sample grid per epoch and at the end to runs/acgan/, and scores the generator every epoch with
# a LeNet trained on the real training set (GAN-test accuracy, Frechet distance in its features;
# the LeNet is trained once into runs/classifier/ and reused). Extra arguments go to train_gan,
# e.g.:
#   bash tools/train_gan.sh --dtype bfloat16           # mixed precision (BF16)
#   bash tools/train_gan.sh --dtype float16            # FP16, a dynamic loss scale per network
#   bash tools/train_gan.sh --time_budget 30           # stop after 30 minutes of training
#   bash tools/train_gan.sh --train_data DIR --data_format quickdraw   # Quick, Draw! .npy files
#   bash tools/train_gan.sh --samples 1000 --samples_out runs/acgan/samples
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bin/train_gan ]] || bash tools/build.sh
bash tools/setup_deps.sh
D=/usr/share/datasets/fashion-mnist
source tools/gan_classifier.sh
mkdir -p runs/acgan
exec build/bin/train_gan \
  --train_data "$D/train-images-idx3-ubyte.gz" \
  --batch_size 64 --epochs 5 --base_lr 2e-4 --beta1 0.5 \
  --classifier_net models/lenet/lenet_train_net.pbtxt \
  --classifier_params runs/classifier/checkpoint.pb \
  --out_dir runs/acgan --log_every 200 \
  --log_csv runs/acgan/log.csv --summary_json runs/acgan/summary.json "$@"
