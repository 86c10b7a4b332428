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
  torch_accuracy.txt          with --epoch: the test accuracy after one epoch of training
  net.pbtxt, init.pbtxt       with --caffe2: the model as Caffe2 nets (forward net with
  torch_final_init.pbtxt      SoftmaxWithLoss, initial and final parameters)

Options give the other sides of the comparison: --precision (PyTorch's own mixed-precision
drift), --perturb (PyTorch's own sensitivity to rounding-level changes of the initial weights),
--lr_policy step or cosine (with the momentum correction that makes PyTorch's SGD follow
Caffe2's when the rate changes). --optimizer picks torch.optim's SGD, Adam, AdamW, Adagrad,
RMSprop or Adadelta, each with PyTorch's default epsilon unless --epsilon is given.

Adding a family: a function returning the nn.Module (inputs 1x28x28, 10 classes) in FAMILIES.
"""
import argparse
import copy
import os
import struct
import types

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


class Bottleneck(nn.Module):
    """A ResNet bottleneck block (1x1, 3x3, 1x1) with a 1x1 projection shortcut, stride 1."""

    def __init__(self, cin, width, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return torch.relu(self.bn3(self.conv3(y)) + self.short(x))


def bottleneck():
    return nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         Bottleneck(16, 8, 32), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(32, 10))


def resnet18():
    """torchvision's ResNet-18 for 1-channel 28x28 input and 10 classes."""
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    return model


def mobilenet_v2():
    """torchvision's MobileNetV2 (depthwise convolutions, BatchNorm, ReLU6) for 1-channel input."""
    import torchvision
    model = torchvision.models.mobilenet_v2(num_classes=10)
    model.features[0][0] = nn.Conv2d(1, 32, 3, 2, 1, bias=False)
    # Its classifier's Dropout draws a random mask, which no two frameworks draw alike.
    model.classifier[0] = nn.Identity()
    return model


FAMILIES = {"mlp": mlp, "lenet": lenet, "bn_cnn": bn_cnn, "resnet_block": resnet_block,
            "bottleneck": bottleneck, "resnet18": resnet18, "mobilenet_v2": mobilenet_v2}


def write_idx(path, array):
    with open(path, "wb") as f:
        f.write(struct.pack(">I", 0x800 | array.ndim))
        f.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def batch(n, seed, size):
    if os.path.exists(FASHION):
        images = read_idx(FASHION)[:n]
        labels = read_idx(FASHION.replace("images-idx3", "labels-idx1"))[:n]
    else:
        rng = np.random.RandomState(seed)
        images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
    if size != 28:  # bilinear, back to uint8 pixels
        x = torch.from_numpy(images.astype(np.float32)).unsqueeze(1)
        x = nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
        images = x.squeeze(1).round().clamp(0, 255).numpy().astype(np.uint8)
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


def round16(t):
    """FP16 storage: the value rounded to half precision (its gradient is rounded on the way back
    too, as an FP16 activation's gradient is)."""
    return t.half().float()


def fp16_forward(module, x):
    """A convolution or linear layer as CUDA's FP16 autocast runs it: inputs, weight and bias in
    FP16, products accumulated in FP32, output stored in FP16. PyTorch's CPU autocast has no FP16,
    so this is its emulation in FP32 arithmetic with rounding at every FP16 store."""
    w = round16(module.weight)
    b = None if module.bias is None else round16(module.bias)
    if isinstance(module, nn.Conv2d):
        return round16(module._conv_forward(round16(x), w, b))
    return round16(nn.functional.linear(round16(x), w, b))


def use_fp16(model):
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            m.forward = types.MethodType(fp16_forward, m)


def cosine_rates(a):
    """PyTorch's CosineAnnealingLR(T_max=max_iter, eta_min=min_lr) after 1, 2, ..., steps
    scheduler steps (for --steps below --max_iter, where Caffe2's cosine has not restarted)."""
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=a.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.max_iter, eta_min=a.min_lr)
    rates = []
    for _ in range(a.steps):
        opt.step()
        sched.step()
        rates.append(opt.param_groups[0]["lr"])
    return rates


def learning_rate(a, step):
    """train_net's learning rate at 0-based step `step` (Caffe2's LearningRate reads the iteration
    counter after Iter has incremented it: step + 1)."""
    if a.lr_policy == "step":
        return a.lr * a.gamma ** ((step + 1) // a.stepsize)
    if a.lr_policy == "cosine":
        return cosine_rates(a)[step]
    return a.lr


def caffe2_value(v):
    return repr(float(v))


def caffe2_params(model):
    """The Sequential model's parameters under Caffe2 names: conv1_w, conv1_b, ..., fc1_w, ..."""
    convs = [m for m in model if isinstance(m, nn.Conv2d)]
    fcs = [m for m in model if isinstance(m, nn.Linear)]
    params = {}
    for k, m in enumerate(convs):
        params["conv%d_w" % (k + 1)] = m.weight
        params["conv%d_b" % (k + 1)] = m.bias
    for k, m in enumerate(fcs):
        params["fc%d_w" % (k + 1)] = m.weight
        params["fc%d_b" % (k + 1)] = m.bias
    return convs, fcs, params


def write_caffe2_init(model, path):
    """A Caffe2 init net in protobuf text: GivenTensorFill of the model's current parameters."""
    with open(path, "w") as f:
        f.write('name: "equivalence_init"\n')
        for name, v in caffe2_params(model)[2].items():
            t = v.detach().numpy()
            f.write('op { output: "%s" type: "GivenTensorFill"\n' % name)
            f.write("  arg { name: \"shape\" %s }\n" % " ".join("ints: %d" % d for d in t.shape))
            f.write("  arg { name: \"values\" %s } }\n" %
                    " ".join("floats: " + caffe2_value(x) for x in t.reshape(-1)))


def write_caffe2_nets(model, out):
    """A Sequential of Conv2d, ReLU, MaxPool2d(2), Flatten and Linear (the LeNet family) written
    as Caffe2 nets in protobuf text: net.pbtxt (the forward net with SoftmaxWithLoss, as a Caffe2
    user writes it) and init.pbtxt (GivenTensorFill of the model's initial parameters)."""
    convs, fcs, params = caffe2_params(model)
    write_caffe2_init(model, os.path.join(out, "init.pbtxt"))
    ops = []
    blob = "data"
    for k, m in enumerate(model):
        if isinstance(m, nn.Conv2d):
            n = convs.index(m) + 1
            ops.append('op { input: "%s" input: "conv%d_w" input: "conv%d_b" output: "conv%d" '
                       'type: "Conv" arg { name: "kernel" i: %d } arg { name: "order" s: "NCHW" } }'
                       % (blob, n, n, n, m.kernel_size[0]))
            blob = "conv%d" % n
        elif isinstance(m, nn.ReLU):
            ops.append('op { input: "%s" output: "%s" type: "Relu" }' % (blob, blob))
        elif isinstance(m, nn.MaxPool2d):
            ops.append('op { input: "%s" output: "pool%d" type: "MaxPool" arg { name: "kernel" '
                       'i: 2 } arg { name: "stride" i: 2 } arg { name: "order" s: "NCHW" } }'
                       % (blob, k))
            blob = "pool%d" % k
        elif isinstance(m, nn.Linear):
            n = fcs.index(m) + 1
            ops.append('op { input: "%s" input: "fc%d_w" input: "fc%d_b" output: "fc%d" '
                       'type: "FC" }' % (blob, n, n, n))
            blob = "fc%d" % n
    ops.append('op { input: "%s" input: "label" output: "softmax" output: "loss" '
               'type: "SoftmaxWithLoss" }' % blob)
    with open(os.path.join(out, "net.pbtxt"), "w") as f:
        f.write('name: "equivalence_lenet"\n' + "\n".join(ops) + "\n")
        for name in ["data", "label"] + list(params):
            f.write('external_input: "%s"\n' % name)
        f.write('external_output: "loss"\n')


DEFAULT_EPSILON = {"adam": 1e-8, "adamw": 1e-8, "rmsprop": 1e-8, "adagrad": 1e-10,
                   "adadelta": 1e-6}


def make_optimizer(model, a):
    """torch.optim's SGD (momentum, Nesterov, weight decay), Adam, AdamW, Adagrad, RMSprop or
    Adadelta with the run's settings."""
    eps = a.epsilon if a.epsilon is not None else DEFAULT_EPSILON.get(a.optimizer)
    wd = a.weight_decay
    if a.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=a.lr, betas=(a.beta1, a.beta2), eps=eps,
                                weight_decay=wd)
    if a.optimizer == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(a.beta1, a.beta2), eps=eps,
                                 weight_decay=wd)
    if a.optimizer == "adagrad":
        return torch.optim.Adagrad(model.parameters(), lr=a.lr, eps=eps, weight_decay=wd)
    if a.optimizer == "rmsprop":
        return torch.optim.RMSprop(model.parameters(), lr=a.lr, alpha=a.alpha, eps=eps,
                                   weight_decay=wd, momentum=a.momentum)
    if a.optimizer == "adadelta":
        return torch.optim.Adadelta(model.parameters(), lr=a.lr, rho=a.rho, eps=eps,
                                    weight_decay=wd)
    return torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum,
                           nesterov=a.nesterov, weight_decay=a.weight_decay)


def train_epoch(model, a):
    """One epoch of the full Fashion-MNIST training set (batches of a.batch in the file's order,
    as train_net --shuffle=false reads them, the last one completed from the next epoch's start;
    the fixed-batch run's SGD settings); writes each step's loss and returns the test set's
    accuracy in eval mode."""
    images = read_idx(FASHION).astype(np.float32) / 255.0
    labels = read_idx(FASHION.replace("images-idx3", "labels-idx1")).astype(np.int64)
    test = FASHION.replace("train-", "t10k-")
    test_images = read_idx(test).astype(np.float32) / 255.0
    test_labels = read_idx(test.replace("images-idx3", "labels-idx1")).astype(np.int64)
    opt = make_optimizer(model, a)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    losses = []
    n = len(labels)
    for k in range((n + a.batch - 1) // a.batch):  # the last batch wraps, as train_net's does
        idx = np.arange(k * a.batch, (k + 1) * a.batch) % n
        x = torch.from_numpy(images[idx]).reshape(-1, 1, 28, 28)
        opt.zero_grad()
        loss = loss_fn(model(x), torch.from_numpy(labels[idx]))
        losses.append(loss.item())
        loss.backward()
        opt.step()
    with open(os.path.join(a.out, "torch_losses.txt"), "w") as f:
        f.write("\n".join(repr(v) for v in losses) + "\n")
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(test_images).reshape(-1, 1, 28, 28))
    return (logits.argmax(1).numpy() == test_labels).mean()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", required=True, choices=sorted(FAMILIES))
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--lr_policy", choices=["fixed", "step", "cosine"], default="fixed")
    p.add_argument("--max_iter", type=int, default=0, help="cosine: T_max")
    p.add_argument("--min_lr", type=float, default=0.0, help="cosine: eta_min")
    p.add_argument("--stepsize", type=int, default=0)
    p.add_argument("--gamma", type=float, default=1.0)
    p.add_argument("--optimizer", default="momentum",
                   choices=["momentum", "adam", "adamw", "adagrad", "rmsprop", "adadelta"])
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--epsilon", type=float, default=None, help="default: PyTorch's")
    p.add_argument("--alpha", type=float, default=0.99, help="RMSprop")
    p.add_argument("--rho", type=float, default=0.9, help="Adadelta")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--weight_decay", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--size", type=int, default=28, help="image side (Fashion-MNIST resized)")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="bf16: CPU autocast; fp16: CUDA FP16 autocast emulated (fp16_forward) "
                        "with a static loss scale")
    p.add_argument("--loss_scale", type=float, default=128.0, help="the fp16 run's loss scale")
    p.add_argument("--perturb", type=float, default=0.0,
                   help="train from initial weights multiplied by 1 + perturb * N(0, 1)")
    p.add_argument("--perturb_seed", type=int, default=1)
    p.add_argument("--caffe2", action="store_true",
                   help="also write the model as Caffe2 nets (net.pbtxt, init.pbtxt)")
    p.add_argument("--epoch", action="store_true",
                   help="instead of the fixed batch: one epoch of Fashion-MNIST, then the test "
                        "accuracy (torch_accuracy.txt)")
    p.add_argument("--eval_export", action="store_true",
                   help="export model.onnx as PyTorch does by default (eval mode: BatchNorm "
                        "folded into the convolutions before it) instead of for training")
    a = p.parse_args()

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    model = FAMILIES[a.family]()
    images, labels = batch(a.batch, a.seed, a.size)
    os.makedirs(a.out, exist_ok=True)
    write_idx(os.path.join(a.out, "train-images-idx3-ubyte"), images)
    write_idx(os.path.join(a.out, "train-labels-idx1-ubyte"), labels)
    # train_net's default preprocessing: pixel / 255.
    x = torch.from_numpy(images.astype(np.float32) / 255.0).reshape(-1, 1, a.size, a.size)
    y = torch.from_numpy(labels.astype(np.int64))

    if a.eval_export:
        torch.onnx.export(copy.deepcopy(model).eval(), x, os.path.join(a.out, "model.onnx"),
                          opset_version=14, input_names=["data"], output_names=["logits"])
    else:
        export(model, os.path.join(a.out, "model.onnx"), x)
    if a.caffe2:
        write_caffe2_nets(model, a.out)
    if a.perturb:
        # Rounding-level noise on the initial weights: how far PyTorch's own training moves
        # from such a start measures how strongly this model amplifies rounding differences.
        g = torch.Generator().manual_seed(a.perturb_seed)
        with torch.no_grad():
            for v in model.parameters():
                v.mul_(1 + a.perturb * torch.randn(v.shape, generator=g))
    if a.precision == "fp16":
        use_fp16(model)
    if a.epoch:
        with open(os.path.join(a.out, "torch_accuracy.txt"), "w") as f:
            f.write("%r\n" % train_epoch(model, a))
        return
    model.train()
    opt = make_optimizer(model, a)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    lr = a.lr
    for step in range(a.steps):
        new_lr = learning_rate(a, step)
        if new_lr != lr:
            # Caffe2's MomentumSGDUpdate keeps the learning rate inside the momentum
            # (m = mu m + lr g; w -= m), PyTorch's SGD outside it (b = mu b + g; w -= lr b): the
            # two agree while lr is constant; when it changes, rescaling PyTorch's buffers by
            # old / new keeps them agreeing (the "momentum correction").
            for group in opt.param_groups:
                group["lr"] = new_lr
                for q in group["params"]:
                    if "momentum_buffer" in opt.state[q]:  # SGD only
                        opt.state[q]["momentum_buffer"].mul_(lr / new_lr)
            lr = new_lr
        opt.zero_grad()
        if a.precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)
            loss = loss_fn(out.float(), y)
        else:
            loss = loss_fn(model(x), y)
        losses.append(loss.item())
        if a.precision == "fp16":
            (loss * a.loss_scale).backward()
            for q in model.parameters():
                q.grad.div_(a.loss_scale)
        else:
            loss.backward()
        opt.step()
    with open(os.path.join(a.out, "torch_losses.txt"), "w") as f:
        f.write("\n".join(repr(v) for v in losses) + "\n")
    write_state(model, os.path.join(a.out, "model.onnx"), os.path.join(a.out, "torch_final.onnx"))
    if a.caffe2:
        write_caffe2_init(model, os.path.join(a.out, "torch_final_init.pbtxt"))


if __name__ == "__main__":
    main()
