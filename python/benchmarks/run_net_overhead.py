"""The cost of the Python layer: workspace.RunNet on a one-op net (microseconds per call, the
op's own time measured apart with a C++-side loop of num_iter runs), FeedBlob / FetchBlob of a
small tensor, and FetchBlob of a 100 MB tensor copied versus shared through DLPack.

    PYTHONPATH=python HALFCAF_BUILD_DIR=build python python/benchmarks/run_net_overhead.py
"""
import argparse
import time

import numpy as np

from halfcaf import core, workspace


def best_of(fn, repeats, number):
    """Seconds per call: the best of `repeats` timings of `number` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    workspace.ResetWorkspace()
    workspace.FeedBlob("x", np.ones(1, np.float32))
    net = core.Net("one_op")
    net.Relu("x", "y")
    workspace.CreateNet(net)
    name = net.Name()
    per_call = best_of(lambda: workspace.RunNet(name), args.repeats, args.calls)
    # The same runs looped in C++ (one Python call for `calls` runs): the op and net cost alone.
    in_cpp = best_of(lambda: workspace.RunNet(name, args.calls), args.repeats, 1) / args.calls
    small = np.ones(16, np.float32)
    feed = best_of(lambda: workspace.FeedBlob("s", small), args.repeats, args.calls)
    fetch = best_of(lambda: workspace.FetchBlob("s"), args.repeats, args.calls)
    big = np.random.rand(25 * 1024 * 1024).astype(np.float32)  # 100 MiB
    workspace.FeedBlob("big", big)
    fetch_copy = best_of(lambda: workspace.FetchBlob("big"), 3, 3)
    fetch_view = best_of(lambda: workspace.FetchBlob("big", copy=False), 3, 1000)
    view = workspace.FetchBlob("big", copy=False)
    same = view.ctypes.data == workspace.FetchBlob("big", copy=False).ctypes.data
    print("RunNet, one Relu on 1 float, from Python:  %7.2f us per call" % (per_call * 1e6))
    print("  the same net looped in C++ (num_iter):   %7.2f us per run" % (in_cpp * 1e6))
    print("  Python layer's cost per call:            %7.2f us" % ((per_call - in_cpp) * 1e6))
    print("FeedBlob of 16 floats:                     %7.2f us" % (feed * 1e6))
    print("FetchBlob of 16 floats:                    %7.2f us" % (fetch * 1e6))
    print("FetchBlob of 100 MiB, copied:              %7.2f ms" % (fetch_copy * 1e3))
    print("FetchBlob of 100 MiB, shared (copy=False): %7.2f us (views the blob's storage: %s)"
          % (fetch_view * 1e6, same))


if __name__ == "__main__":
    main()
