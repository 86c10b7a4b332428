#!/usr/bin/env python3
"""PyTorch peer for `benchmark --model resnet50|resnet18`: the same model, batch, data shape and
optimiser, timed the same way.

torchvision's ResNet (v1.5, like halfcaf's zoo) trained on synthetic data (one fixed random batch,
as halfcaf's synthetic reader costs next to nothing) with SGD momentum 0.9 and cross entropy.
fp32 runs in FP32; fp16 runs with AMP (autocast float16 + GradScaler) and needs CUDA (on the CPU
it is reported as skipped); bf16 runs with autocast bfloat16 (no scaler: bfloat16 has float's
range) on the CPU or the GPU. NHWC uses channels_last. --mode forward times the eval-mode forward
pass under no_grad.

Prints one JSON line per precision x batch size on stdout, with the fields of benchmark's JSON:
framework, model, mode, device, order, precision, batch_size, status, iters, ms_per_iter_median,
ms_per_iter_min / max / p10 / p90, images_per_sec, peak_memory_mb. Progress goes to stderr.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torchvision

from peer_common import MemoryWindow, timing_fields


def run_one(args, precision, batch, device):
    torch.manual_seed(args.seed)
    model_fn = getattr(torchvision.models, args.model)
    model = model_fn(num_classes=args.num_classes).to(device)
    memory_format = torch.channels_last if args.order == "NHWC" else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    x = torch.randn(batch, 3, args.image_size, args.image_size, device=device)
    x = x.contiguous(memory_format=memory_format)
    y = torch.randint(0, args.num_classes, (batch,), device=device)
    amp = precision in ("fp16", "bf16")
    # (CPU autocast takes bfloat16 only, even when disabled.)
    amp_dtype = torch.bfloat16 if precision == "bf16" or device.type == "cpu" else torch.float16
    cuda = device.type == "cuda"
    if args.mode == "train":
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        scaler = torch.cuda.amp.GradScaler(enabled=precision == "fp16")
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    else:
        model.eval()

        def step():
            with torch.no_grad(), torch.autocast(device_type=device.type, dtype=amp_dtype,
                                                 enabled=amp):
                model(x)

    label = f"pytorch {args.model} {precision} batch {batch}"
    times = []
    for i in range(args.warmup + args.iters):
        phase = "warm-up" if i < args.warmup else "timing"
        print(f"benchmark: {label}  {phase} {i + 1 if i < args.warmup else i + 1 - args.warmup}",
              file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize(device)
        if i >= args.warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "resnet18"])
    ap.add_argument("--batch_size", default="32,64", help="comma-separated")
    ap.add_argument("--precision", default="fp32,fp16", help="comma-separated fp32 / fp16 / bf16")
    ap.add_argument("--order", default="NCHW", choices=["NCHW", "NHWC"])
    ap.add_argument("--mode", default="train", choices=["train", "forward"])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--num_classes", type=int, default=1000)
    ap.add_argument("--image_size", type=int, default=224)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.iters < 1:
        ap.error("--iters must be positive")

    threads = args.threads if args.threads > 0 else (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("resnet_pytorch.py: error: --device cuda but torch sees no CUDA device",
              file=sys.stderr)
        sys.exit(1)
    device = torch.device("cuda", args.gpu) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        # The FP32 ("Pascal path") numbers must be real FP32 math.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    batches = [int(b) for b in args.batch_size.split(",") if b.strip()]
    precisions = [p.strip() for p in args.precision.split(",") if p.strip()]
    for precision in precisions:
        for batch in batches:
            rec = {"framework": f"pytorch {torch.__version__}", "model": args.model,
                   "mode": args.mode, "device": str(device), "order": args.order,
                   "precision": precision, "batch_size": batch, "status": "ok"}
            if precision == "fp16" and device.type != "cuda":
                rec["status"] = "skipped: fp16 autocast needs CUDA"
                print(json.dumps(rec), flush=True)
                continue
            window = MemoryWindow(torch, device)
            try:
                times = run_one(args, precision, batch, device)
            except RuntimeError as e:
                if "out of memory" not in str(e).lower():
                    raise
                rec["status"] = "out of memory"
                print(json.dumps(rec), flush=True)
                continue
            rec.update(timing_fields(times, batch))
            rec.update({"peak_memory_mb": window.peak_mb(), "threads": threads})
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
