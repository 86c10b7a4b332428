"""data_parallel: two CPU replicas, each on half the batch, step like one model on the whole."""
import numpy as np

from halfcaf import data_parallel, optimizer, workspace

from conftest import fc_softmax_model


def _model(name):
    return fc_softmax_model(name)


def test_two_replicas_step_like_one_model_on_the_whole_batch():
    rs = np.random.RandomState(0)
    x = rs.randn(8, 4).astype(np.float32)
    label = rs.randint(0, 3, 8).astype(np.int32)
    w0 = rs.randn(3, 4).astype(np.float32)
    b0 = rs.randn(3).astype(np.float32)

    single = _model("dp_single")
    optimizer.build_sgd(single, base_learning_rate=0.3)
    workspace.RunNetOnce(single.param_init_net)
    workspace.FeedBlob("fc_w", w0)
    workspace.FeedBlob("fc_b", b0)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("label", label)
    workspace.CreateNet(single.net)
    workspace.RunNet(single.net, 3)
    want_w = workspace.FetchBlob("fc_w")

    devices = data_parallel.cpu_devices(2)
    assert data_parallel.prefixes(devices) == ["cpu_0", "cpu_1"]
    model = _model("dp_two")
    init, train = data_parallel.parallelize(
        model, devices, build_optimizer=lambda m: optimizer.build_sgd(m, base_learning_rate=0.3))
    assert any(op.type == "Sum" for op in train.Proto().op)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init)
    for i, prefix in enumerate(["cpu_0", "cpu_1"]):
        workspace.FeedBlob(prefix + "/fc_w", w0)
        workspace.FeedBlob(prefix + "/fc_b", b0)
        workspace.FeedBlob(prefix + "/x", x[4 * i:4 * i + 4])
        workspace.FeedBlob(prefix + "/label", label[4 * i:4 * i + 4])
    workspace.CreateNet(train)
    workspace.RunNet(train, 3)
    for prefix in ("cpu_0", "cpu_1"):
        np.testing.assert_allclose(workspace.FetchBlob(prefix + "/fc_w"), want_w, rtol=1e-5,
                                   atol=1e-6)
