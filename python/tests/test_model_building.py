"""core.Net op construction, gradients through the C++ registry, ModelHelper and brew."""
import numpy as np
import pytest

import halfcaf
from halfcaf import brew, core, model_helper, scope, workspace
from halfcaf.proto import caffe2_pb2


def test_method_call_ops_and_auto_names():
    net = core.Net("build")
    x = net.AddExternalInput("x")
    y = net.Relu(x)  # auto-named
    assert str(y) == "build/Relu" and isinstance(y, core.BlobReference)
    z = y.Relu([])
    assert str(z) == "build/Relu_2"
    a, b = net.Split(z, 2, axis=1)
    assert (str(a), str(b)) == ("build/Split:0", "build/Split:1")
    assert [op.type for op in net.Proto().op] == ["Relu", "Relu", "Split"]
    assert net.Proto().op[2].arg[0].name == "axis" and net.Proto().op[2].arg[0].i == 1
    with pytest.raises(AttributeError, match="not a halfcaf operator"):
        net.NoSuchOperator(x)
    workspace.FeedBlob("x", np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32))
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(b), [[0.0, 4.0]])


def test_name_and_device_scopes():
    net = core.Net("scoped")
    with scope.NameScope("tower"):
        with scope.DeviceScope(core.DeviceOption(caffe2_pb2.CPU, 0)):
            y = net.Relu("x", "y")
    assert str(y) == "tower/y"
    assert net.Proto().op[0].input[0] == "tower/x"
    assert net.Proto().op[0].HasField("device_option")
    assert y.GetNameScope() == "tower/" and y.GetUnscopedName() == "y"
    with core.NameScope("a"), core.NameScope("b"):  # Caffe2 scripts reach them through core
        assert str(core.ScopedBlobReference("z")) == "a/b/z"


def test_clone_remaps_blobs():
    net = core.Net("orig")
    net.Relu("a", "b")
    net.Relu("b", "c")
    clone = net.Clone("copy", blob_remap={"a": "a2"}, op_id_mask=[0])
    assert clone.Name() == "copy"
    assert [list(op.input) for op in clone.Proto().op] == [["a2"]]


def test_gradients_match_finite_differences():
    rs = np.random.RandomState(1)
    net = core.Net("grad")
    y = net.FC(["x", "w", "b"], "y")
    s = net.Sigmoid(y, "s")
    loss = net.AveragedLoss(net.SquaredL2Distance([s, "t"], "d"), "loss")
    grads = net.AddGradientOperators([loss])
    assert str(grads["w"]) == "w_grad" and str(grads["b"]) == "b_grad"
    feeds = {"x": rs.randn(4, 3), "w": rs.randn(2, 3), "b": rs.randn(2), "t": rs.randn(4, 2)}
    for k, v in feeds.items():
        workspace.FeedBlob(k, v.astype(np.float32))
    workspace.RunNetOnce(net)
    analytic = workspace.FetchBlob("w_grad")

    def loss_at(w):
        out = 1 / (1 + np.exp(-(feeds["x"] @ w.T + feeds["b"])))
        return (0.5 * ((out - feeds["t"]) ** 2).sum(axis=1)).mean()

    numeric = np.zeros_like(feeds["w"])
    for i in np.ndindex(*feeds["w"].shape):
        d = np.zeros_like(feeds["w"])
        d[i] = 1e-5
        numeric[i] = (loss_at(feeds["w"] + d) - loss_at(feeds["w"] - d)) / 2e-5
    np.testing.assert_allclose(analytic, numeric, rtol=1e-3, atol=1e-5)


def test_gradient_of_a_blob_not_produced_is_an_error():
    net = core.Net("bad_grad")
    net.Relu("x", "y")
    with pytest.raises(halfcaf.EnforceNotMet, match="nope"):
        net.AddGradientOperators(["nope"])


def test_model_helper_and_brew_lenet_shapes():
    model = model_helper.ModelHelper(name="lenet_shapes", arg_scope={"order": "NCHW"})
    conv1 = brew.conv(model, "data", "conv1", dim_in=1, dim_out=20, kernel=5)
    pool1 = brew.max_pool(model, conv1, "pool1", kernel=2, stride=2)
    bn = brew.spatial_bn(model, pool1, "bn1", 20, epsilon=1e-3)
    relu = brew.relu(model, bn, "relu1")
    drop = brew.dropout(model, relu, "drop1", ratio=0.5)
    fc = brew.fc(model, drop, "fc1", dim_in=20 * 12 * 12, dim_out=10)
    softmax = brew.softmax(model, fc, "softmax")
    assert [str(p) for p in model.params] == ["conv1_w", "conv1_b", "bn1_s", "bn1_b", "fc1_w", "fc1_b"]
    assert [str(p) for p in model.GetComputedParams()] == ["bn1_rm", "bn1_riv"]
    assert [str(w) for w in model.weights] == ["conv1_w", "bn1_s", "fc1_w"]
    conv_op = model.net.Proto().op[0]
    assert conv_op.type == "Conv" and {a.name for a in conv_op.arg} >= {"kernel", "order"}
    workspace.RunNetOnce(model.param_init_net)
    assert workspace.FetchBlob("conv1_w").shape == (20, 1, 5, 5)
    workspace.FeedBlob("data", np.random.rand(2, 1, 28, 28).astype(np.float32))
    workspace.RunNetOnce(model.net)
    out = workspace.FetchBlob(softmax)
    assert out.shape == (2, 10)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_brew_arg_scope_and_init_params_false():
    model = model_helper.ModelHelper(name="scoped_brew", init_params=False)
    with brew.arg_scope([brew.conv], kernel=3, pad=1):
        brew.conv(model, "data", "c", dim_in=3, dim_out=8)
    op = model.net.Proto().op[0]
    assert {a.name: a.i for a in op.arg if a.HasField("i")}["pad"] == 1
    assert len(model.param_init_net.Proto().op) == 0  # parameters come from elsewhere
    assert "fc" in brew.helpers() and "spatial_bn" in brew.helpers()
    with pytest.raises(AttributeError):
        brew.no_such_helper


def test_model_gradients_and_param_to_grad():
    model = model_helper.ModelHelper(name="fc_model")
    fc = brew.fc(model, "x", "fc", dim_in=4, dim_out=3)
    softmax, loss = model.net.SoftmaxWithLoss([fc, "label"], ["softmax", "loss"])
    model.AddGradientOperators([loss])
    assert {str(k): str(v) for k, v in model.param_to_grad.items()} == {
        "fc_w": "fc_w_grad", "fc_b": "fc_b_grad"}
    infos = model.GetOptimizationParamInfo()
    assert [str(i.blob) for i in infos] == ["fc_w", "fc_b"]
    with pytest.raises(RuntimeError, match="already"):
        model.AddGradientOperators([loss])
