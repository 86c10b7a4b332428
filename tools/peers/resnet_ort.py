#!/usr/bin/env python3
"""ONNX Runtime peer for `benchmark --mode forward --compare ort`: the model halfcaf timed, run by
ONNX Runtime on the CPU and timed the same way.

benchmark exports the forward net it timed, with its parameters, with halfcaf's own ONNX exporter
(one file per batch size, as the exporter's shapes are static) and passes the files with --onnx,
in the order of --batch_sizes; a single --onnx file serves every batch size (benchmark --net
model.onnx passes that model as it is; a batch size its input cannot take is reported skipped).

The session: CPU execution provider, intra_op_num_threads = --threads (0: all cores),
inter_op_num_threads 1, sequential execution, every graph optimisation (ORT_ENABLE_ALL). Its
thread pool sleeps when it waits unless OMP_WAIT_POLICY is ACTIVE, as halfcaf's and PyTorch's
OpenMP threads do (benchmark runs them with a short spin: spinning threads slow down many times
over on a machine shared with other work). One fixed random input
(normal, seeded); every iteration times session.run() alone. fp32 only: fp16 and bf16 rows are
reported as skipped.

Prints one JSON line per precision x batch size on stdout, with the fields of benchmark's JSON:
framework, model, mode, device, order, precision, batch_size, status, iters, ms_per_iter_median,
ms_per_iter_min / max / p10 / p90, images_per_sec, peak_memory_mb (the peak resident set, VmHWM
reset through /proc/self/clear_refs, minus the resident set before the session was made: the
weights, ONNX Runtime's arena and the activations; 0 where the reset is not possible). Progress
goes to stderr.
"""
import argparse
import ctypes
import gc
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

from peer_common import quantile, reset_peak_rss


def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def release_freed_memory():
    """The previous configuration's session and buffers, back to the system before the baseline
    (as benchmark does for halfcaf with malloc_trim)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def make_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "ACTIVE":
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_one(args, path, batch, threads, label):
    """Times `batch` on the model at `path`; returns (times in ms, None) or (None, why skipped)."""
    session = make_session(path, threads)
    inp = session.get_inputs()[0]
    shape = [batch] + args.input_shape
    # A fixed dimension of the model's input that differs from the benchmark's.
    for want, have in zip(shape, inp.shape):
        if isinstance(have, int) and have > 0 and have != want:
            return None, (f"skipped: the model's input {inp.name} is {inp.shape}, "
                          f"not {shape}")
    x = np.random.default_rng(args.seed).standard_normal(shape, dtype=np.float32)
    feed = {inp.name: x}
    times = []
    for i in range(args.warmup + args.iters):
        warm = i < args.warmup
        print(f"benchmark: {label}  {'warm-up' if warm else 'timing'} "
              f"{i + 1 if warm else i + 1 - args.warmup}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        session.run(None, feed)
        if not warm:
            times.append((time.perf_counter() - t0) * 1000.0)
    return times, None


def is_out_of_memory(e):
    s = str(e).lower()
    return "bad_alloc" in s or "out of memory" in s or "failed to allocate" in s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnx", action="append", required=True,
                    help="the model; once for every batch size, or once per --batch_sizes entry")
    ap.add_argument("--batch_sizes", default="1", help="comma-separated")
    ap.add_argument("--precision", default="fp32", help="comma-separated fp32 / fp16")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--input_shape", required=True, help="C,H,W of one sample")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.iters < 1:
        ap.error("--iters must be positive")
    if args.warmup < 0:
        ap.error("--warmup must be >= 0")
    args.input_shape = [int(v) for v in args.input_shape.split(",") if v.strip()]
    if len(args.input_shape) != 3 or min(args.input_shape) < 1:
        ap.error("--input_shape must be C,H,W")
    batches = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    if len(args.onnx) not in (1, len(batches)):
        ap.error(f"give --onnx once, or once per batch size ({len(batches)}); "
                 f"got {len(args.onnx)}")
    models = args.onnx if len(args.onnx) == len(batches) else args.onnx * len(batches)
    precisions = [p.strip() for p in args.precision.split(",") if p.strip()]
    threads = args.threads if args.threads > 0 else (os.cpu_count() or 1)
    # ONNX Runtime's one-time set-up (its environment, kernel registry, MLAS; about 10 MB) before
    # the first baseline, as the PyTorch peer imports torch before it: the peak of a
    # configuration is what that configuration takes.
    make_session(models[0], threads)
    np.random.default_rng(args.seed).standard_normal(1, dtype=np.float32)

    for precision in precisions:
        for batch, path in zip(batches, models):
            rec = {"framework": f"onnxruntime {ort.__version__}", "model": os.path.basename(path),
                   "mode": "forward", "device": "cpu", "order": "NCHW",
                   "precision": precision, "batch_size": batch, "status": "ok"}
            if precision != "fp32":
                rec["status"] = "skipped: the ONNX Runtime peer runs the fp32 model only"
                print(json.dumps(rec), flush=True)
                continue
            release_freed_memory()
            hwm_reset = reset_peak_rss()
            base = status_mb("VmRSS")
            label = f"onnxruntime {precision} batch {batch}"
            try:
                times, skipped = run_one(args, path, batch, threads, label)
            except Exception as e:  # ONNX Runtime's errors derive from Exception alone
                if not isinstance(e, MemoryError) and not is_out_of_memory(e):
                    raise
                rec["status"] = "out of memory"
                print(json.dumps(rec), flush=True)
                continue
            if skipped:
                rec["status"] = skipped
                print(json.dumps(rec), flush=True)
                continue
            peak = (status_mb("VmHWM") - base) if hwm_reset else 0.0
            med = statistics.median(times)
            rec.update({
                "iters": len(times),
                "ms_per_iter": med,
                "ms_per_iter_median": med,
                "ms_per_iter_min": min(times),
                "ms_per_iter_max": max(times),
                "ms_per_iter_p10": quantile(times, 0.1),
                "ms_per_iter_p90": quantile(times, 0.9),
                "images_per_sec": 1000.0 * batch / med,
                "peak_memory_mb": max(peak, 0.0),
                "threads": threads,
            })
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
