#!/usr/bin/env python3
"""PyTorch side of the step-by-step training equivalence suite (tests/tools/train_equivalence_test.cc).

Builds one model family with a fixed seed, exports it to ONNX for training (TrainingMode.TRAINING:
BatchNorm stays a trainable layer) with its initial weights, writes the fixed batch it trains on
as idx files, trains it in PyTorch with momentum SGD and writes every step's loss and, as a second
ONNX file, the final parameters and BatchNorm running statistics. halfcaf's train_net then
fine-tunes model.onnx on the same batch with the same settings, and the test compares.

Files in --out:
  model.onnx                  the model with its initial weights (opset 14, training export)
  train-images-idx3-ubyte     the batch, uint8 (--batch images of 28x28 Fashion-MNIST, or seeded
  train-labels-idx1-ubyte     noise when the data set is not installed) and its labels
  torch_losses.txt            one loss per step, before that step's update
  torch_final.onnx            model.onnx with the parameters and running statistics after the
                              last step

Adding a family: a function returning the nn.Module (inputs 1x28x28, 10 classes) in FAMILIES.
"""
import argparse
import copy
import os
import struct

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

from lenet_pytorch import read_idx  # tools/peers

FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))


def lenet():
    return nn.Sequential(nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 5),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def bn_cnn():
    """Conv-BN-ReLU blocks: the BatchNorm an eval-mode export would fold into the convolution."""
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


class BasicBlock(nn.Module):
    """A ResNet basic block with a projection shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.short(x))


def resnet_block():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                         BasicBlock(8, 16, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 10))


FAMILIES = {"mlp": mlp, "lenet": lenet, "bn_cnn": bn_cnn, "resnet_block": resnet_block}


def write_idx(path, array):
    with open(path, "wb") as f:
        f.write(struct.pack(">I", 0x800 | array.ndim))
        f.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def batch(n, seed):
    if os.path.exists(FASHION):
        images = read_idx(FASHION)[:n]
        labels = read_idx(FASHION.replace("images-idx3", "labels-idx1"))[:n]
    else:
        rng = np.random.RandomState(seed)
        images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
    return images, labels


def export(model, path, x):
    """Exports a copy (a training-mode export runs the model once, which would move its BatchNorm
    running statistics), then writes the model's own state into the file's initializers."""
    torch.onnx.export(copy.deepcopy(model), x, path, opset_version=14, input_names=["data"],
                      output_names=["logits"], training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    write_state(model, path, path)


def write_state(model, onnx_path, out_path):
    """onnx_path's graph with the model's current parameters and running statistics."""
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    m = onnx.load(onnx_path)
    for init in m.graph.initializer:
        if init.name in state:
            init.CopyFrom(numpy_helper.from_array(state[init.name], init.name))
    onnx.save(m, out_path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", required=True, choices=sorted(FAMILIES))
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--weight_decay", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval_export", action="store_true",
                   help="export model.onnx as PyTorch does by default (eval mode: BatchNorm "
                        "folded into the convolutions before it) instead of for training")
    a = p.parse_args()

    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    model = FAMILIES[a.family]()
    images, labels = batch(a.batch, a.seed)
    os.makedirs(a.out, exist_ok=True)
    write_idx(os.path.join(a.out, "train-images-idx3-ubyte"), images)
    write_idx(os.path.join(a.out, "train-labels-idx1-ubyte"), labels)
    # train_net's default preprocessing: pixel / 255.
    x = torch.from_numpy(images.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(labels.astype(np.int64))

    if a.eval_export:
        torch.onnx.export(copy.deepcopy(model).eval(), x, os.path.join(a.out, "model.onnx"),
                          opset_version=14, input_names=["data"], output_names=["logits"])
    else:
        export(model, os.path.join(a.out, "model.onnx"), x)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, nesterov=a.nesterov,
                          weight_decay=a.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(a.steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    with open(os.path.join(a.out, "torch_losses.txt"), "w") as f:
        f.write("\n".join(repr(v) for v in losses) + "\n")
    write_state(model, os.path.join(a.out, "model.onnx"), os.path.join(a.out, "torch_final.onnx"))


if __name__ == "__main__":
    main()
