"""Signals while the native code runs oneDNN 2.6's SGEMM kernels (core/signal_stack.h).

Those kernels point rsp into a heap workspace while they run; a signal handled on the interrupted
stack writes its frame there and corrupts the heap (a Ctrl-C during training aborted later in
free()). Python installs its handlers with SA_ONSTACK, and importing halfcaf gives the importing
thread an alternate signal stack, so a stream of signals during FC products leaves the heap and
the results intact.
"""
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np
    from halfcaf import core, workspace

    count = [0]
    def handler(signum, frame):
        count[0] += 1
    signal.signal(signal.SIGUSR1, handler)
    rng = np.random.default_rng(0)
    workspace.FeedBlob("x", rng.standard_normal((16, 6272)).astype(np.float32))
    workspace.FeedBlob("w", rng.standard_normal((11, 6272)).astype(np.float32))
    workspace.FeedBlob("b", np.zeros(11, np.float32))
    fc = core.CreateOperator("FC", ["x", "w", "b"], ["y"])
    workspace.RunOperatorOnce(fc)
    want = workspace.FetchBlob("y").copy()
    stop = threading.Event()
    def send():
        while not stop.is_set():
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.00002)
    sender = threading.Thread(target=send)
    sender.start()
    same = True
    for _ in range(3000):
        workspace.RunOperatorOnce(fc)
        same = same and np.array_equal(workspace.FetchBlob("y"), want)
    stop.set()
    sender.join()
    junk = [bytearray(1 << 16) for _ in range(64)]  # allocations: glibc checks its chunks
    sys.exit(0 if same and count[0] > 100 else 3)
""")


def test_signals_during_fc_products_leave_the_heap_intact():
    r = subprocess.run([sys.executable, "-c", CHILD], env=dict(os.environ),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
