#!/usr/bin/env python3
"""PyTorch peer for halfcaf's AC-GAN: the same generator, discriminator, losses and Adam recipe.

The model (parameter names are halfcaf's blob names; BatchNorm layer L has L_s, L_b, L_rm, L_riv):
  G(noise (B,100), label (B,)):  g_embed_w (10,100) embedding times the noise, elementwise;
      g_fc (100 -> 6272; g_fc_b frozen at zero, the BatchNorm after it cancels it), view
      (B,128,7,7), g_bn0, ReLU; g_deconv1 (128 -> 64, 4x4, stride 2, pad 1, no bias) -> 14x14,
      g_bn1, ReLU; g_deconv2 (64 -> 1, 4x4, stride 2, pad 1, bias) -> 28x28, tanh.
  D(x (B,1,28,28)):  d_conv1 (1 -> 64, 4x4, stride 2, pad 1, bias), LeakyReLU 0.2, Dropout;
      d_conv2 (64 -> 128, no bias), d_bn2, LeakyReLU 0.2, Dropout; flatten (NCHW) to 6272;
      d_adv (6272 -> 1, the real/fake logit) and d_cls (6272 -> 10, the class logits).
  BatchNorm: eps 1e-5, momentum 0.1 (Caffe2 convention 0.9), running variance unbiased.
  Initialisation: embedding N(0, 1), convolution and linear weights N(0, 0.02), biases zero,
  BatchNorm scale 1 and bias 0.

One training iteration (Adam for D and for G, BCE-with-logits and cross entropy, mean reduction):
  D step: fake = G(d_noise, d_gen_label); out_r = D(real); out_f = D(fake.detach());
          d_loss = ((bce(out_r.adv, 1) + ce(out_r.cls, real_label)) + bce(out_f.adv, 0))
                   + ce(out_f.cls, d_gen_label); Adam step on D's parameters.
  G step: out = D(G(g_noise, g_gen_label)); g_loss = bce(out.adv, 1) + ce(out.cls, g_gen_label);
          Adam step on G's parameters (the forward also moves D's running statistics).

Three modes:
  --equivalence DIR  step-by-step comparison with halfcaf: reads the initial parameters
      (DIR/init/<name>.npy) and every step's inputs (DIR/real.npy, real_label.npy, d_noise.npy,
      d_gen_label.npy, g_noise.npy, g_gen_label.npy; S steps of batch B), trains S steps on one
      thread and writes DIR/<out_name>/torch_losses.txt ("d_loss g_loss" per step) and
      DIR/<out_name>/final/<name>.npy. --precision fp32 (plain FP32), bf16 (CPU autocast
      bfloat16) or fp16 (CUDA's FP16 autocast emulated on the CPU, as train_equivalence.py does
      it, with a static loss scale; a step whose gradients are not finite is skipped and listed
      in skipped_steps.txt).
  --train  the quality run: Fashion-MNIST style idx files (--data) or a folder of per-class
      uint8 (N,784) arrays (--quickdraw), pixels scaled to [-1,1], shuffled every epoch, until
      --steps, --epochs or --time_budget; then optional class-conditional samples (pixels in
      [0,1]) and a JSON summary.
  --bench  one JSON line per precision x batch size on stdout, with the fields of the other
      peers' benchmark lines (see resnet_pytorch.py) plus d_ms_median and g_ms_median: each
      timed iteration is one D step and one G step on a fixed synthetic batch.
Progress goes to stderr.
"""
import argparse
import contextlib
import glob
import json
import os
import statistics
import sys
import time
import types

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from lenet_pytorch import labels_path, read_idx  # tools/peers

from peer_common import MemoryWindow, timing_fields

NOISE = 100
CLASSES = 10
LEAK = 0.2

# Every parameter and running statistic, in halfcaf's names, with its shape.
BLOB_SHAPES = {
    "g_embed_w": (CLASSES, NOISE),
    "g_fc_w": (6272, NOISE),
    "g_fc_b": (6272,),
    "g_bn0_s": (128,), "g_bn0_b": (128,), "g_bn0_rm": (128,), "g_bn0_riv": (128,),
    "g_deconv1_w": (128, 64, 4, 4),
    "g_bn1_s": (64,), "g_bn1_b": (64,), "g_bn1_rm": (64,), "g_bn1_riv": (64,),
    "g_deconv2_w": (64, 1, 4, 4),
    "g_deconv2_b": (1,),
    "d_conv1_w": (64, 1, 4, 4),
    "d_conv1_b": (64,),
    "d_conv2_w": (128, 64, 4, 4),
    "d_bn2_s": (128,), "d_bn2_b": (128,), "d_bn2_rm": (128,), "d_bn2_riv": (128,),
    "d_adv_w": (1, 6272),
    "d_adv_b": (1,),
    "d_cls_w": (CLASSES, 6272),
    "d_cls_b": (CLASSES,),
}

# The equivalence inputs: file name -> (dtype, shape after (S, B)).
STEP_INPUTS = {
    "real": (np.float32, (1, 28, 28)),
    "real_label": (np.int64, ()),
    "d_noise": (np.float32, (NOISE,)),
    "d_gen_label": (np.int64, ()),
    "g_noise": (np.float32, (NOISE,)),
    "g_gen_label": (np.int64, ()),
}


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.g_embed = nn.Embedding(CLASSES, NOISE)  # N(0, 1), PyTorch's default
        self.g_fc = nn.Linear(NOISE, 128 * 7 * 7)
        self.g_bn0 = nn.BatchNorm2d(128, eps=1e-5, momentum=0.1)
        self.g_deconv1 = nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1, bias=False)
        self.g_bn1 = nn.BatchNorm2d(64, eps=1e-5, momentum=0.1)
        self.g_deconv2 = nn.ConvTranspose2d(64, 1, 4, stride=2, padding=1, bias=True)
        for m in (self.g_fc, self.g_deconv1, self.g_deconv2):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        # The BatchNorm after g_fc subtracts the batch mean: a bias there would do nothing.
        self.g_fc.bias.requires_grad_(False)

    def forward(self, noise, label):
        h = noise * self.g_embed(label)
        h = self.g_fc(h).view(-1, 128, 7, 7)
        h = F.relu(self.g_bn0(h))
        h = F.relu(self.g_bn1(self.g_deconv1(h)))
        return torch.tanh(self.g_deconv2(h))


class Discriminator(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.d_conv1 = nn.Conv2d(1, 64, 4, stride=2, padding=1, bias=True)
        self.d_conv2 = nn.Conv2d(64, 128, 4, stride=2, padding=1, bias=False)
        self.d_bn2 = nn.BatchNorm2d(128, eps=1e-5, momentum=0.1)
        self.d_adv = nn.Linear(128 * 7 * 7, 1)
        self.d_cls = nn.Linear(128 * 7 * 7, CLASSES)
        self.drop = nn.Dropout(dropout)
        for m in (self.d_conv1, self.d_conv2, self.d_adv, self.d_cls):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, x):
        h = self.drop(F.leaky_relu(self.d_conv1(x), LEAK))
        h = self.drop(F.leaky_relu(self.d_bn2(self.d_conv2(h)), LEAK))
        h = h.flatten(1)
        return self.d_adv(h), self.d_cls(h)


def blobs(G, D):
    """halfcaf name -> the module tensor holding it (parameters and running statistics)."""
    out = {
        "g_embed_w": G.g_embed.weight,
        "g_fc_w": G.g_fc.weight, "g_fc_b": G.g_fc.bias,
        "g_deconv1_w": G.g_deconv1.weight,
        "g_deconv2_w": G.g_deconv2.weight, "g_deconv2_b": G.g_deconv2.bias,
        "d_conv1_w": D.d_conv1.weight, "d_conv1_b": D.d_conv1.bias,
        "d_conv2_w": D.d_conv2.weight,
        "d_adv_w": D.d_adv.weight, "d_adv_b": D.d_adv.bias,
        "d_cls_w": D.d_cls.weight, "d_cls_b": D.d_cls.bias,
    }
    for name, bn in (("g_bn0", G.g_bn0), ("g_bn1", G.g_bn1), ("d_bn2", D.d_bn2)):
        out[name + "_s"] = bn.weight
        out[name + "_b"] = bn.bias
        out[name + "_rm"] = bn.running_mean
        out[name + "_riv"] = bn.running_var
    assert set(out) == set(BLOB_SHAPES)
    return out


def adam(module, args):
    # foreach=False: the single-tensor update, one parameter at a time (the equivalence reference).
    return torch.optim.Adam([p for p in module.parameters() if p.requires_grad], lr=args.lr,
                            betas=(args.beta1, args.beta2), eps=1e-8, weight_decay=0.0,
                            foreach=False)


# ---- FP16 autocast emulated on the CPU (the approach of train_equivalence.py's fp16 case) ------

def round16(t):
    """FP16 storage: the value rounded to half precision (its gradient is rounded on the way back
    too, as an FP16 activation's gradient is)."""
    return t.half().float()


def fp16_forward(module, x):
    """A convolution, transposed convolution or linear layer as CUDA's FP16 autocast runs it:
    input, weight and bias in FP16, products accumulated in FP32, output stored in FP16; here in
    FP32 arithmetic with rounding at every FP16 store. Everything else (embedding, BatchNorm,
    activations, losses) stays FP32, as autocast leaves it."""
    w = round16(module.weight)
    b = None if module.bias is None else round16(module.bias)
    if isinstance(module, nn.ConvTranspose2d):
        y = F.conv_transpose2d(round16(x), w, b, module.stride, module.padding,
                               module.output_padding, module.groups, module.dilation)
    elif isinstance(module, nn.Conv2d):
        y = module._conv_forward(round16(x), w, b)
    else:
        y = F.linear(round16(x), w, b)
    return round16(y)


def use_fp16(model):
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
            m.forward = types.MethodType(fp16_forward, m)


class Precision:
    """How a step runs its forward passes and turns a loss into an optimizer step.

    fp32: plain FP32. bf16: autocast bfloat16 (no loss scale). fp16 on CUDA: autocast float16
    with one GradScaler per optimizer. fp16_emulated: the models' layers patched by use_fp16 and a
    static loss scale; the gradients are multiplied by 1 / scale, and a step whose gradients are
    not all finite is skipped (the optimizer neither moves nor counts it)."""

    def __init__(self, kind, device, loss_scale=128.0):
        self.kind = kind
        self.device = device
        self.loss_scale = loss_scale
        self.scalers = {}

    def autocast(self):
        if self.kind == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        if self.kind == "fp16":
            return torch.autocast(device_type="cuda", dtype=torch.float16)
        return contextlib.nullcontext()

    def step(self, loss, opt):
        """Backward of `loss` into opt's parameters and the update; False if the emulated fp16
        step was skipped for gradients that are not finite."""
        if self.kind == "fp16":
            scaler = self.scalers.setdefault(id(opt), torch.cuda.amp.GradScaler())
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return True  # not checked: reading the scale back would synchronise the GPU
        if self.kind == "fp16_emulated":
            (loss * self.loss_scale).backward()
            inv = 1.0 / self.loss_scale
            finite = True
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(inv)
                        finite = finite and bool(torch.isfinite(p.grad).all())
            if not finite:
                return False
            opt.step()
            return True
        loss.backward()
        opt.step()
        return True


def gan_losses(adv, cls, target, labels):
    """bce(adv, target) + ce(cls, labels), in FP32 (autocast runs losses in FP32 too)."""
    adv = adv.float()
    t = torch.full_like(adv, float(target))
    return F.binary_cross_entropy_with_logits(adv, t), F.cross_entropy(cls.float(), labels)


def d_step(G, D, optD, prec, real, real_label, noise, gen_label):
    with prec.autocast():
        fake = G(noise, gen_label)
        adv_r, cls_r = D(real)
        adv_f, cls_f = D(fake.detach())
        bce_r, ce_r = gan_losses(adv_r, cls_r, 1, real_label)
        bce_f, ce_f = gan_losses(adv_f, cls_f, 0, gen_label)
        loss = bce_r + ce_r + bce_f + ce_f  # ((a + b) + c) + d
    optD.zero_grad()
    stepped = prec.step(loss, optD)
    return loss.detach(), stepped


def g_step(G, D, optG, prec, noise, gen_label):
    with prec.autocast():
        adv, cls = D(G(noise, gen_label))
        bce, ce = gan_losses(adv, cls, 1, gen_label)
        loss = bce + ce
    optG.zero_grad()
    stepped = prec.step(loss, optG)
    return loss.detach(), stepped


def fail(msg):
    print("acgan_pytorch.py: error: " + msg, file=sys.stderr)
    sys.exit(1)


# ---- Mode 1: step-by-step equivalence --------------------------------------------------------

def load_init(G, D, folder):
    """Copies folder/<name>.npy into every parameter and running statistic; fails on a missing
    file or a wrong shape."""
    targets = blobs(G, D)
    missing = [n for n in BLOB_SHAPES if not os.path.exists(os.path.join(folder, n + ".npy"))]
    if missing:
        fail("%s lacks %s" % (folder, ", ".join(n + ".npy" for n in missing)))
    extra = sorted(set(os.path.splitext(f)[0] for f in os.listdir(folder) if f.endswith(".npy"))
                   - set(BLOB_SHAPES))
    if extra:
        print("acgan_pytorch.py: warning: ignoring %s in %s" % (", ".join(extra), folder),
              file=sys.stderr)
    with torch.no_grad():
        for name, shape in BLOB_SHAPES.items():
            arr = np.load(os.path.join(folder, name + ".npy"))
            if tuple(arr.shape) != shape:
                fail("%s/%s.npy has shape %s, the model's %s is %s"
                     % (folder, name, tuple(arr.shape), name, shape))
            targets[name].copy_(torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32)))


def load_step_inputs(folder):
    data = {}
    steps = batch = None
    for name, (dtype, tail) in STEP_INPUTS.items():
        path = os.path.join(folder, name + ".npy")
        if not os.path.exists(path):
            fail("%s is missing" % path)
        arr = np.load(path)
        if arr.ndim != 2 + len(tail) or tuple(arr.shape[2:]) != tail:
            fail("%s has shape %s, expected (S, B)%s" % (path, arr.shape,
                                                          "" if not tail else " + " + str(tail)))
        if steps is None:
            steps, batch = arr.shape[:2]
        elif arr.shape[:2] != (steps, batch):
            fail("%s has %s steps x batch, real.npy %s" % (path, arr.shape[:2], (steps, batch)))
        if dtype == np.int64 and (arr.min() < 0 or arr.max() >= CLASSES):
            fail("%s holds labels outside [0, %d)" % (path, CLASSES))
        data[name] = torch.from_numpy(np.ascontiguousarray(arr, dtype=dtype))
    return data, steps, batch


def run_equivalence(args):
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # only Dropout draws (none with --dropout 0)
    precision = args.precision or "fp32"
    if precision not in ("fp32", "bf16", "fp16"):
        fail("--equivalence takes one --precision: fp32, bf16 or fp16")
    if args.dropout > 0:
        print("acgan_pytorch.py: warning: --dropout %g draws masks no other framework draws alike"
              % args.dropout, file=sys.stderr)
    G, D = Generator(), Discriminator(args.dropout)
    load_init(G, D, os.path.join(args.equivalence, "init"))
    data, steps, batch = load_step_inputs(args.equivalence)
    print("acgan_pytorch.py: %d steps of batch %d, %s" % (steps, batch, precision),
          file=sys.stderr)
    if precision == "fp16":
        use_fp16(G)
        use_fp16(D)
        prec = Precision("fp16_emulated", torch.device("cpu"), args.loss_scale)
    else:
        prec = Precision(precision, torch.device("cpu"))
    G.train()
    D.train()
    optD, optG = adam(D, args), adam(G, args)
    losses, skipped = [], []
    for s in range(steps):
        d_loss, d_ok = d_step(G, D, optD, prec, data["real"][s], data["real_label"][s],
                              data["d_noise"][s], data["d_gen_label"][s])
        g_loss, g_ok = g_step(G, D, optG, prec, data["g_noise"][s], data["g_gen_label"][s])
        losses.append((float(d_loss), float(g_loss)))
        skipped += ["%d D" % s] * (not d_ok) + ["%d G" % s] * (not g_ok)
    out = os.path.join(args.equivalence, args.out_name)
    os.makedirs(os.path.join(out, "final"), exist_ok=True)
    with open(os.path.join(out, "torch_losses.txt"), "w") as f:
        f.write("".join("%r %r\n" % dg for dg in losses))
    if precision == "fp16":
        with open(os.path.join(out, "skipped_steps.txt"), "w") as f:
            f.write("".join(line + "\n" for line in skipped))
    for name, t in blobs(G, D).items():
        np.save(os.path.join(out, "final", name + ".npy"),
                t.detach().cpu().numpy().astype(np.float32))
    print("acgan_pytorch.py: wrote %s (last d_loss %r, g_loss %r%s)"
          % (out, losses[-1][0], losses[-1][1],
             ", skipped " + ", ".join(skipped) if skipped else ""), file=sys.stderr)


# ---- Mode 2: the quality run -----------------------------------------------------------------

def load_dataset(args):
    """uint8 images (N, 28, 28) and int64 labels (N,)."""
    if args.quickdraw:
        files = sorted(glob.glob(os.path.join(args.quickdraw, "*.npy")))
        if len(files) != CLASSES:
            fail("--quickdraw %s holds %d .npy files; the model has %d classes"
                 % (args.quickdraw, len(files), CLASSES))
        images, labels = [], []
        for c, path in enumerate(files):
            arr = np.load(path, mmap_mode="r")[:args.per_class]
            if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != 784:
                fail("%s: expected uint8 (N, 784), got %s %s" % (path, arr.dtype, arr.shape))
            images.append(np.asarray(arr).reshape(-1, 28, 28))
            labels.append(np.full(len(arr), c, dtype=np.int64))
            print("acgan_pytorch.py: class %d = %s (%d images)"
                  % (c, os.path.basename(path)[:-4], len(arr)), file=sys.stderr)
        return np.concatenate(images), np.concatenate(labels)
    lpath = labels_path(args.data)
    if lpath == args.data or not os.path.exists(lpath):
        fail("no labels file beside %s (expected %s)" % (args.data, lpath))
    images = read_idx(args.data)
    labels = read_idx(lpath).astype(np.int64)
    if images.shape[1:] != (28, 28) or len(labels) != len(images):
        fail("%s: expected (N, 28, 28) images with N labels" % args.data)
    return images, labels


def write_samples(G, args, device):
    """args.samples images per class from G in eval mode (FP32), pixels (tanh + 1) / 2."""
    gen = torch.Generator().manual_seed(args.sample_seed)
    noise = torch.randn(args.samples * CLASSES, NOISE, generator=gen)
    labels = torch.arange(CLASSES).repeat_interleave(args.samples)
    G.eval()
    with torch.no_grad():
        images = (G(noise.to(device), labels.to(device)).float().cpu() + 1) / 2
    os.makedirs(args.samples_out, exist_ok=True)
    np.save(os.path.join(args.samples_out, "images.npy"), images.numpy().astype(np.float32))
    np.save(os.path.join(args.samples_out, "labels.npy"), labels.numpy().astype(np.int64))
    print("acgan_pytorch.py: wrote %d samples to %s" % (len(labels), args.samples_out),
          file=sys.stderr)


def run_train(args, device, threads):
    precision = args.precision or "fp32"
    if precision not in ("fp32", "bf16"):
        fail("--train takes --precision fp32 or bf16")
    if not (args.data or args.quickdraw):
        fail("--train needs --data or --quickdraw")
    if args.steps is None and args.epochs is None and args.time_budget is None:
        fail("--train needs --steps, --epochs or --time_budget")
    if args.samples > 0 and not args.samples_out:
        fail("--samples needs --samples_out")
    images, labels = load_dataset(args)
    n = len(images)
    per_epoch = n // args.batch_size  # the last partial batch of an epoch is dropped
    if per_epoch < 1:
        fail("%d images make no batch of %d" % (n, args.batch_size))
    images = torch.from_numpy(np.array(images, dtype=np.uint8))  # a writable copy
    labels = torch.from_numpy(labels)
    max_steps = args.steps if args.steps is not None else float("inf")
    if args.epochs is not None:
        max_steps = min(max_steps, int(round(args.epochs * per_epoch)))
    budget = args.time_budget * 60.0 if args.time_budget is not None else float("inf")

    torch.manual_seed(args.seed)
    G, D = Generator().to(device), Discriminator(args.dropout).to(device)
    G.train()
    D.train()
    optD, optG = adam(D, args), adam(G, args)
    prec = Precision(precision, device)
    shuffle = torch.Generator().manual_seed(args.seed)
    print("acgan_pytorch.py: training on %d images (%d steps per epoch), batch %d, %s, "
          "%d threads" % (n, per_epoch, args.batch_size, precision, threads), file=sys.stderr)

    step = 0
    d_loss = g_loss = float("nan")
    order = None
    start = time.perf_counter()
    last_t, last_step = start, 0
    while step < max_steps and time.perf_counter() - start < budget:
        k = step % per_epoch
        if k == 0:
            order = torch.randperm(n, generator=shuffle)
        idx = order[k * args.batch_size:(k + 1) * args.batch_size]
        real = (images[idx].unsqueeze(1).float() * (2.0 / 255.0) - 1.0).to(device)
        real_label = labels[idx].to(device)
        b = args.batch_size
        d_noise = torch.randn(b, NOISE, device=device)
        d_label = torch.randint(0, CLASSES, (b,), device=device)
        d, _ = d_step(G, D, optD, prec, real, real_label, d_noise, d_label)
        g_noise = torch.randn(b, NOISE, device=device)
        g_label = torch.randint(0, CLASSES, (b,), device=device)
        g, _ = g_step(G, D, optG, prec, g_noise, g_label)
        step += 1
        if step % args.log_every == 0 or step == max_steps:
            d_loss, g_loss = float(d), float(g)
            now = time.perf_counter()
            print("step %d  epoch %.2f  d_loss %.4f  g_loss %.4f  %.2f steps/s"
                  % (step, step / per_epoch, d_loss, g_loss, (step - last_step) / (now - last_t)),
                  file=sys.stderr, flush=True)
            last_t, last_step = now, step
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall = time.perf_counter() - start
    if step > 0:
        d_loss, g_loss = float(d), float(g)
    summary = {
        "framework": "pytorch " + torch.__version__,
        "model": "acgan",
        "device": str(device),
        "precision": precision,
        "batch_size": args.batch_size,
        "threads": threads,
        "steps": step,
        "epochs": step / per_epoch,
        "wall_seconds": wall,
        "steps_per_sec": step / wall if wall > 0 else 0.0,
        "images_per_sec": step * args.batch_size / wall if wall > 0 else 0.0,
        "final_d_loss": d_loss,
        "final_g_loss": g_loss,
        "seed": args.seed,
    }
    if args.samples > 0:
        write_samples(G, args, device)
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    print(json.dumps(summary), flush=True)


# ---- Mode 3: benchmark -----------------------------------------------------------------------

def bench_one(args, precision, batch, device):
    """(total, D, G) milliseconds of each timed iteration."""
    torch.manual_seed(args.seed)
    G, D = Generator().to(device), Discriminator(args.dropout).to(device)
    G.train()
    D.train()
    optD, optG = adam(D, args), adam(G, args)
    prec = Precision(precision, device)
    real = torch.rand(batch, 1, 28, 28, device=device) * 2 - 1
    real_label = torch.randint(0, CLASSES, (batch,), device=device)
    cuda = device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    label = "pytorch acgan %s batch %d" % (precision, batch)
    total, d_times, g_times = [], [], []
    for i in range(args.warmup + args.iters):
        warm = i < args.warmup
        print("benchmark: %s  %s %d" % (label, "warm-up" if warm else "timing",
                                        i + 1 if warm else i + 1 - args.warmup),
              file=sys.stderr, flush=True)
        sync()
        t0 = time.perf_counter()
        d_step(G, D, optD, prec, real, real_label, torch.randn(batch, NOISE, device=device),
               torch.randint(0, CLASSES, (batch,), device=device))
        sync()
        t1 = time.perf_counter()
        g_step(G, D, optG, prec, torch.randn(batch, NOISE, device=device),
               torch.randint(0, CLASSES, (batch,), device=device))
        sync()
        t2 = time.perf_counter()
        if not warm:
            d_times.append((t1 - t0) * 1000.0)
            g_times.append((t2 - t1) * 1000.0)
            total.append((t2 - t0) * 1000.0)
    return total, d_times, g_times


def run_bench(args, device, threads):
    if args.iters < 1:
        fail("--iters must be positive")
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        # The FP32 numbers must be real FP32 math.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    batches = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    precisions = [p.strip() for p in (args.precision or "fp32,bf16,fp16").split(",") if p.strip()]
    for p in precisions:
        if p not in ("fp32", "bf16", "fp16"):
            fail("--precision: unknown precision '%s'" % p)
    for precision in precisions:
        for batch in batches:
            rec = {"framework": "pytorch " + torch.__version__, "model": "acgan", "mode": "train",
                   "device": str(device), "precision": precision, "batch_size": batch,
                   "status": "ok"}
            if precision == "fp16" and device.type != "cuda":
                rec["status"] = "skipped: fp16 autocast needs CUDA"
                print(json.dumps(rec), flush=True)
                continue
            window = MemoryWindow(torch, device)
            try:
                total, d_times, g_times = bench_one(args, precision, batch, device)
            except Exception as e:  # one failing configuration must not hide the others
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                rec["status"] = "out of memory" if "out of memory" in msg.lower() \
                    else "failed: " + msg
                print(json.dumps(rec), flush=True)
                continue
            rec.update(timing_fields(total, batch))
            rec.update({
                "d_ms_median": statistics.median(d_times),
                "g_ms_median": statistics.median(g_times),
                "ms_per_1000_samples": 1000.0 * statistics.median(total) / batch,
                "peak_memory_mb": window.peak_mb(),
                "threads": threads,
            })
            print(json.dumps(rec), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--equivalence", metavar="DIR",
                      help="train on DIR's initial parameters and step inputs; write "
                           "DIR/<out_name>/torch_losses.txt and DIR/<out_name>/final/*.npy")
    mode.add_argument("--train", action="store_true", help="the quality run")
    mode.add_argument("--bench", action="store_true", help="time D + G steps; JSON lines")

    common = ap.add_argument_group("all modes")
    common.add_argument("--precision", default=None,
                        help="--equivalence: fp32 (default), bf16 or fp16 (emulated); --train: "
                             "fp32 (default) or bf16; --bench: comma-separated, default "
                             "fp32,bf16,fp16")
    common.add_argument("--lr", type=float, default=2e-4)
    common.add_argument("--beta1", type=float, default=0.5)
    common.add_argument("--beta2", type=float, default=0.999)
    common.add_argument("--dropout", type=float, default=0.25, help="D's dropout probability")
    common.add_argument("--seed", type=int, default=1)
    common.add_argument("--threads", type=int, default=0,
                        help="0: all cores (--equivalence always runs on one)")
    common.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="--train and --bench")
    common.add_argument("--gpu", type=int, default=0)

    eq = ap.add_argument_group("--equivalence")
    eq.add_argument("--out_name", default="torch", help="output folder inside DIR")
    eq.add_argument("--loss_scale", type=float, default=128.0, help="fp16's static loss scale")

    tr = ap.add_argument_group("--train")
    tr.add_argument("--data", help="idx images file (gzip or raw); labels beside it")
    tr.add_argument("--quickdraw", metavar="DIR",
                    help="folder of <class>.npy uint8 (N, 784), class = sorted file position")
    tr.add_argument("--per_class", type=int, default=10000, help="--quickdraw images per class")
    tr.add_argument("--batch_size", type=int, default=64)
    tr.add_argument("--steps", type=int, default=None)
    tr.add_argument("--epochs", type=float, default=None)
    tr.add_argument("--time_budget", type=float, default=None, metavar="MINUTES",
                    help="training wall clock")
    tr.add_argument("--log_every", type=int, default=100)
    tr.add_argument("--samples", type=int, default=0, help="images per class at the end")
    tr.add_argument("--samples_out", metavar="DIR", help="writes images.npy and labels.npy")
    tr.add_argument("--sample_seed", type=int, default=7)
    tr.add_argument("--summary_json", metavar="PATH")

    be = ap.add_argument_group("--bench")
    be.add_argument("--batch_sizes", default="64,128", help="comma-separated")
    be.add_argument("--iters", type=int, default=50)
    be.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    if args.log_every < 1:
        ap.error("--log_every must be positive")

    if args.equivalence:
        run_equivalence(args)
        return
    threads = args.threads if args.threads > 0 else (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        if args.bench:
            # Every configuration is reported, as skipped.
            for p in (args.precision or "fp32,bf16,fp16").split(","):
                for b in args.batch_sizes.split(","):
                    if p.strip() and b.strip():
                        print(json.dumps({"framework": "pytorch " + torch.__version__,
                                          "model": "acgan", "mode": "train", "device": "cuda",
                                          "precision": p.strip(), "batch_size": int(b),
                                          "status": "skipped: torch sees no CUDA device"}),
                              flush=True)
            return
        fail("--device cuda but torch sees no CUDA device")
    device = torch.device("cuda", args.gpu) if args.device == "cuda" else torch.device("cpu")
    if args.train:
        run_train(args, device, threads)
    else:
        run_bench(args, device, threads)


if __name__ == "__main__":
    main()
