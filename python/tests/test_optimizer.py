"""optimizer.build_*: one step of each against its update rule, and momentum SGD step by step
against torch.optim.SGD; mixed precision against FP32."""
import numpy as np
import pytest

from halfcaf import brew, core, mixed_precision, model_helper, optimizer, workspace

from conftest import fc_softmax_model

RS = np.random.RandomState(3)
X = RS.randn(8, 4).astype(np.float32)
LABEL = RS.randint(0, 3, size=8).astype(np.int32)


def _model(name):
    return fc_softmax_model(name)


def _step(build, **kwargs):
    """(w before, its gradient, w after one step)."""
    model = _model("opt_" + build.__name__)
    n_forward_backward = len(model.net.Proto().op)
    build(model, **kwargs)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(model.param_init_net)
    w0 = workspace.FetchBlob("fc_w")
    workspace.FeedBlob("x", X)
    workspace.FeedBlob("label", LABEL)
    grad_net = model.net.Clone("grad_only_" + build.__name__,
                               op_id_mask=list(range(n_forward_backward)))
    workspace.RunNetOnce(grad_net)
    g = workspace.FetchBlob("fc_w_grad")
    workspace.CreateNet(model.net)
    workspace.RunNet(model.net)
    return w0, g, workspace.FetchBlob("fc_w")


def test_sgd():
    w0, g, w1 = _step(optimizer.build_sgd, base_learning_rate=0.5)
    np.testing.assert_allclose(w1, w0 - 0.5 * g, rtol=1e-5, atol=1e-6)


def test_sgd_step_policy_and_nesterov_momentum():
    w0, g, w1 = _step(optimizer.build_sgd, base_learning_rate=0.5, momentum=0.9,
                      policy="step", stepsize=1, gamma=0.5)
    lr = 0.5 * 0.5 ** 1  # the counter is 1 when the first step's rate is computed
    np.testing.assert_allclose(w1, w0 - (1 + 0.9) * lr * g, rtol=1e-5, atol=1e-6)


def test_adam():
    w0, g, w1 = _step(optimizer.build_adam, base_learning_rate=0.01, beta1=0.9, beta2=0.999,
                      epsilon=1e-8)
    t = 2  # Caffe2's Adam: iteration + 1, the counter already advanced
    c = np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
    m1, m2 = 0.1 * g, 0.001 * g * g
    np.testing.assert_allclose(w1, w0 - 0.01 * c * m1 / (np.sqrt(m2) + 1e-8), rtol=1e-4, atol=1e-6)


def test_adagrad():
    w0, g, w1 = _step(optimizer.build_adagrad, base_learning_rate=0.1, epsilon=1e-4)
    np.testing.assert_allclose(w1, w0 - 0.1 * g / (np.sqrt(g * g) + 1e-4), rtol=1e-4, atol=1e-6)


def test_rms_prop():
    w0, g, w1 = _step(optimizer.build_rms_prop, base_learning_rate=0.01, decay=0.9, epsilon=1e-5)
    ms = 0.1 * g * g
    np.testing.assert_allclose(w1, w0 - 0.01 * g / np.sqrt(1e-5 + ms), rtol=1e-4, atol=1e-6)


def test_optimizer_needs_gradients():
    model = model_helper.ModelHelper(name="no_grads")
    brew.fc(model, "x", "fc", dim_in=4, dim_out=3)
    with pytest.raises(ValueError, match="AddGradientOperators"):
        optimizer.build_sgd(model, base_learning_rate=0.1)


def test_momentum_sgd_every_step_like_pytorch():
    torch = pytest.importorskip("torch")
    model = _model("like_torch")
    optimizer.build_sgd(model, base_learning_rate=0.2, momentum=0.9, nesterov=False)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(model.param_init_net)
    lin = torch.nn.Linear(4, 3)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(workspace.FetchBlob("fc_w")))
        lin.bias.copy_(torch.from_numpy(workspace.FetchBlob("fc_b")))
    opt = torch.optim.SGD(lin.parameters(), lr=0.2, momentum=0.9)
    workspace.FeedBlob("x", X)
    workspace.FeedBlob("label", LABEL)
    workspace.CreateNet(model.net)
    rs = np.random.RandomState(7)
    for step in range(15):
        x = rs.randn(8, 4).astype(np.float32)
        label = rs.randint(0, 3, size=8).astype(np.int32)
        workspace.FeedBlob("x", x)
        workspace.FeedBlob("label", label)
        workspace.RunNet(model.net)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(lin(torch.from_numpy(x)),
                                                 torch.from_numpy(label).long())
        loss.backward()
        opt.step()
        np.testing.assert_allclose(workspace.FetchBlob("loss"), loss.item(), rtol=1e-5,
                                   err_msg="step %d" % step)
    np.testing.assert_allclose(workspace.FetchBlob("fc_w"), lin.weight.detach().numpy(),
                               rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("low_type", ["float16", "bfloat16"])
def test_multi_precision_sgd_follows_fp32(low_type):
    losses = {}
    for kind in ("float32", low_type):
        model = model_helper.ModelHelper(name="mp_" + kind)
        h = brew.relu(model, brew.fc(model, "x", "fc1", dim_in=4, dim_out=16), "h")
        fc = brew.fc(model, h, "fc2", dim_in=16, dim_out=3)
        _, loss = model.net.SoftmaxWithLoss([fc, "label"], ["softmax", "loss"])
        if kind != "float32":
            copied = mixed_precision.convert(model, low_type)
            assert sorted(copied) == ["fc1_b", "fc1_w", "fc2_b", "fc2_w"]
            suffix = "_fp16" if low_type == "float16" else "_bf16"
            fc_ops = [op for op in model.net.Proto().op if op.type == "FC"]
            assert all(op.input[1].endswith(suffix) for op in fc_ops)
        model.AddGradientOperators([loss])
        optimizer.build_multi_precision_sgd(model, base_learning_rate=0.1, momentum=0.9)
        workspace.ResetWorkspace()
        np.random.seed(0)
        workspace.RunNetOnce(model.param_init_net)
        for name in ("fc1_w", "fc1_b", "fc2_w", "fc2_b"):  # the same start for both
            workspace.FeedBlob(name, np.random.RandomState(len(name)).randn(
                *workspace.FetchBlob(name).shape).astype(np.float32) * 0.3)
        if kind != "float32":
            for name in copied:  # the copies of the new start
                workspace.RunOperatorOnce(core.CreateOperator(
                    mixed_precision.to_low_op(low_type), [name], [name + suffix]))
        workspace.FeedBlob("x", X)
        workspace.FeedBlob("label", LABEL)
        workspace.CreateNet(model.net)
        run = []
        for _ in range(20):
            workspace.RunNet(model.net)
            run.append(float(workspace.FetchBlob("loss")))
        losses[kind] = np.array(run)
    assert losses["float32"][-1] < losses["float32"][0] * 0.5
    tol = 2e-3 if low_type == "float16" else 2e-2
    np.testing.assert_allclose(losses[low_type], losses["float32"], rtol=tol * 10, atol=tol)
