#!/usr/bin/env bash
# The AC-GAN's scoring classifier: a LeNet trained by train_net for 3 epochs on the real
# Fashion-MNIST training set (~0.89 on the real test images) into runs/classifier/, once; later
# calls find its checkpoint and do nothing. Sourced by tools/train_gan.sh and
# tools/gan_equal_time.sh (run from the repository root).
D=${D:-/usr/share/datasets/fashion-mnist}
if [[ ! -f runs/classifier/checkpoint.pb ]]; then
  echo "gan_classifier.sh: training the scoring classifier (LeNet, 3 epochs) into runs/classifier"
  mkdir -p runs/classifier
  build/bin/train_net \
    --net models/lenet/lenet_train_net.pbtxt --init_net models/lenet/lenet_init_net.pbtxt \
    --train_data "$D/train-images-idx3-ubyte.gz" --test_data "$D/t10k-images-idx3-ubyte.gz" \
    --batch_size 64 --epochs 3 --base_lr 0.01 --log_every 1000 \
    --checkpoint_dir runs/classifier --summary_json runs/classifier/summary.json
fi
