#!/usr/bin/env python3
"""PyTorch peer for train_net's LeNet: the same net, data, batch, optimiser and threads.

Trains LeNet (conv 20@5x5, maxpool, conv 50@5x5, maxpool, fc 500, relu, fc 10) on Fashion-MNIST
idx files with momentum SGD, and prints a JSON line with the fields train_net's --summary_json
writes (images_per_sec, final_loss, test_accuracy, wall_seconds, iterations)."""
import argparse
import gzip
import json
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def labels_path(images_path):
    return images_path.replace("images-idx3", "labels-idx1")


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc3 = nn.Linear(800, 500)
        self.pred = nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(self.conv1(x), 2, 2)
        x = F.max_pool2d(self.conv2(x), 2, 2)
        x = F.relu(self.fc3(x.flatten(1)))
        return self.pred(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train_data", required=True)
    ap.add_argument("--test_data", default="")
    ap.add_argument("--batch_size", type=int, default=64)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--base_lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    images = torch.from_numpy(read_idx(args.train_data).copy())
    labels = torch.from_numpy(read_idx(labels_path(args.train_data)).astype(np.int64))
    n = images.shape[0]
    model = LeNet()
    opt = torch.optim.SGD(model.parameters(), lr=args.base_lr, momentum=args.momentum)
    gen = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(n, generator=gen)
    pos = 0
    loss = torch.tensor(0.0)
    start = time.perf_counter()
    for _ in range(args.iters):
        if pos + args.batch_size > n:
            order = torch.randperm(n, generator=gen)
            pos = 0
        idx = order[pos:pos + args.batch_size]
        pos += args.batch_size
        x = images[idx].unsqueeze(1).float().mul_(1.0 / 255.0)
        y = labels[idx]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    wall = time.perf_counter() - start
    result = {
        "framework": "pytorch " + torch.__version__,
        "iterations": args.iters,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "final_loss": float(loss),
        "images_per_sec": args.iters * args.batch_size / wall,
        "wall_seconds": wall,
    }
    if args.test_data:
        tx = torch.from_numpy(read_idx(args.test_data).copy()).unsqueeze(1).float() / 255.0
        ty = torch.from_numpy(read_idx(labels_path(args.test_data)).astype(np.int64))
        with torch.no_grad():
            result["test_accuracy"] = float((model(tx).argmax(1) == ty).float().mean())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
