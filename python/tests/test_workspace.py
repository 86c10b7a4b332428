"""workspace: feeding and fetching every dtype, copies and shared (DLPack) views, nets,
operators, plans, workspaces, and errors as Python exceptions."""
import numpy as np
import pytest

import halfcaf
from halfcaf import core, workspace
from halfcaf.proto import caffe2_pb2


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int64,
                                   np.int8, np.int16, np.uint8, np.uint16, np.bool_])
def test_feed_fetch_round_trip(dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    workspace.FeedBlob("a", a)
    b = workspace.FetchBlob("a")
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(a, b)
    assert workspace.BlobInfo("a")[1] == [2, 3, 4]


def test_fetch_is_a_copy_and_feed_copies():
    a = np.ones((3,), np.float32)
    workspace.FeedBlob("a", a)
    a[0] = 5
    b = workspace.FetchBlob("a")
    assert b[0] == 1
    b[1] = 7
    assert workspace.FetchBlob("a")[1] == 1


def test_shared_views_see_the_same_memory():
    a = np.arange(6, dtype=np.float32)
    workspace.FeedBlob("a", a, copy=False)
    view = workspace.FetchBlob("a", copy=False)
    assert np.shares_memory(view, a)
    a[2] = 42
    assert view[2] == 42
    # An op writing in place updates the caller's array.
    workspace.RunOperatorOnce(core.CreateOperator("Scale", ["a"], ["a"], scale=2.0))
    assert a[2] == 84
    del a
    import gc
    gc.collect()
    assert workspace.FetchBlob("a")[1] == 2  # the blob keeps the array alive


def test_non_contiguous_and_scalar_feeds():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    workspace.FeedBlob("a", a)
    np.testing.assert_array_equal(workspace.FetchBlob("a"), a)
    with pytest.raises(halfcaf.EnforceNotMet, match="C-contiguous"):
        workspace.FeedBlob("b", a, copy=False)
    workspace.FeedBlob("s", 3.5)
    assert workspace.FetchBlob("s").shape == () and workspace.FetchBlob("s").dtype == np.float64


def test_bfloat16():
    x = np.array([1.0, 1.00390625, 3.14159, -2.5e-3], np.float32)
    workspace.FeedBlob("x", x, dtype="bfloat16")
    assert workspace.BlobInfo("x")[0] == "bfloat16"
    y = workspace.FetchBlob("x")
    assert y.dtype == np.float32
    # Round to nearest even on the top 16 bits.
    bits = x.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(y, rounded)


def test_errors_are_python_exceptions():
    with pytest.raises(halfcaf.EnforceNotMet, match="'nope' does not exist"):
        workspace.FetchBlob("nope")
    assert issubclass(halfcaf.EnforceNotMet, RuntimeError)
    with pytest.raises(halfcaf.EnforceNotMet, match="NoSuchOp"):
        workspace.RunOperatorOnce(core.CreateOperator("NoSuchOp", [], ["y"]))
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    workspace.FeedBlob("w", np.ones((4, 5), np.float32))
    workspace.FeedBlob("b", np.ones((4,), np.float32))
    with pytest.raises(halfcaf.EnforceNotMet):
        workspace.RunOperatorOnce(core.CreateOperator("FC", ["x", "w", "b"], ["y"]))
    with pytest.raises(halfcaf.EnforceNotMet, match="not a serialized NetDef"):
        halfcaf._C.run_net_once(b"\xff\xff\xff")
    with pytest.raises(TypeError):
        workspace.FeedBlob("o", np.array(["a", "b"], dtype=object))
    with pytest.raises(halfcaf.EnforceNotMet, match="does not exist"):
        workspace.RunNet("never_created")


def test_nets_run_num_iter_times():
    net = core.Net("counter")
    net.ConstantFill([], "one", shape=[1], value=1.0)
    workspace.FeedBlob("acc", np.zeros(1, np.float32))
    net.Add(["acc", "one"], "acc")
    workspace.CreateNet(net)
    workspace.RunNet(net, num_iter=5)
    assert workspace.FetchBlob("acc")[0] == 5
    workspace.RunNet(net.Name())
    assert workspace.FetchBlob("acc")[0] == 6
    assert net.Name() in workspace.Nets()


def test_switch_workspace():
    workspace.FeedBlob("x", np.ones(2, np.float32))
    workspace.SwitchWorkspace("other", True)
    assert workspace.CurrentWorkspace() == "other"
    assert not workspace.HasBlob("x")
    with pytest.raises(halfcaf.EnforceNotMet, match="does not exist"):
        workspace.SwitchWorkspace("missing")
    workspace.SwitchWorkspace("default")
    assert workspace.HasBlob("x")
    assert "other" in workspace.Workspaces()
    workspace.ResetWorkspace()
    assert workspace.Blobs() == []


def test_plan_runs_steps():
    init = core.Net("plan_init")
    init.ConstantFill([], "x", shape=[1], value=0.0)
    init.ConstantFill([], "one", shape=[1], value=1.0)
    body = core.Net("plan_body")
    body.Add(["x", "one"], "x")
    plan = core.Plan("p")
    plan.AddStep(core.execution_step("init", init))
    plan.AddStep(core.execution_step("loop", body, num_iter=7))
    workspace.RunPlan(plan)
    assert workspace.FetchBlob("x")[0] == 7


def test_global_init():
    workspace.GlobalInit(["python", "--caffe2_log_level=1"])
    with pytest.raises(halfcaf.EnforceNotMet, match="unknown flag"):
        workspace.GlobalInit(["python", "--no_such_flag=1"])


def test_dlpack_with_pytorch_copies_nothing():
    torch = pytest.importorskip("torch")
    x = np.random.RandomState(0).randn(1000, 1000).astype(np.float32)
    workspace.FeedBlob("x", x)
    view = workspace.FetchBlob("x", copy=False)
    t = torch.from_dlpack(view)
    assert t.data_ptr() == view.ctypes.data
    assert t.data_ptr() == workspace.FetchBlob("x", copy=False).ctypes.data  # the blob's storage
    # And back: a torch tensor shared into a blob, an op writing into it in place.
    src = torch.arange(4, dtype=torch.float32)
    workspace.FeedBlob("t", src, copy=False)
    workspace.RunOperatorOnce(core.CreateOperator("Scale", ["t"], ["t"], scale=3.0))
    assert src.tolist() == [0.0, 3.0, 6.0, 9.0]
    # bfloat16 travels as bfloat16 through DLPack.
    b = torch.tensor([1.5, -2.25], dtype=torch.bfloat16)
    workspace.FeedBlob("b", b)
    assert workspace.BlobInfo("b")[0] == "bfloat16"
    back = torch.from_dlpack(workspace.FetchBlob("b", copy=False))
    assert back.dtype == torch.bfloat16 and back.tolist() == [1.5, -2.25]


def test_fetching_100_mb_through_dlpack_copies_nothing():
    big = np.zeros(25 * 1024 * 1024, np.float32)  # 100 MiB
    workspace.FeedBlob("big", big)
    a = workspace.FetchBlob("big", copy=False)
    b = workspace.FetchBlob("big", copy=False)
    assert a.ctypes.data == b.ctypes.data  # both view the blob's one storage
    assert not np.shares_memory(a, big)  # FeedBlob copied (copy=True)
    a[123] = 5.0
    assert workspace.FetchBlob("big")[123] == 5.0


def test_the_gil_is_released_while_a_net_runs():
    import threading
    import time
    net = core.Net("slow")
    net.MatMul(["a", "b"], "c")
    workspace.FeedBlob("a", np.ones((256, 256), np.float32))
    workspace.FeedBlob("b", np.ones((256, 256), np.float32))
    workspace.CreateNet(net)
    workspace.RunNet(net, 5)  # warm up
    start = time.perf_counter()
    workspace.RunNet(net, 20)
    per_run = (time.perf_counter() - start) / 20
    iters = max(20, int(0.5 / max(per_run, 1e-6)))  # about half a second of work
    done = threading.Event()
    stamps = []

    def count():
        while not done.is_set():
            stamps.append(time.perf_counter())

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    workspace.RunNet(net, iters)
    t1 = time.perf_counter()
    done.set()
    t.join()
    # The other thread ran Python while the net ran: with the GIL held for the whole RunNet it
    # could not have (its time stamps would all fall before or after it, give or take Python's
    # 5 ms switch interval at either end, which the margin leaves out).
    margin = 0.2 * (t1 - t0)
    inside = sum(1 for s in stamps if t0 + margin < s < t1 - margin)
    assert inside > 100, (inside, t1 - t0)
