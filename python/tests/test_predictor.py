"""predictor: a real Caffe2 deploy net against running the same nets in the workspace directly,
list and dict inputs, every way of giving nets, the caller's workspace left alone, errors as
Python exceptions, the inference optimizer, and closing."""
import os
import subprocess
import sys

import numpy as np
import pytest
from google.protobuf import text_format

import halfcaf
from halfcaf import core, predictor, workspace
from halfcaf.proto import caffe2_pb2

from conftest import REPO, load_net

DEPLOY = os.path.join(REPO, "tests", "fixtures", "caffe2", "mnist_deploy_net.pbtxt")
LENET_INIT = os.path.join(REPO, "models", "lenet", "lenet_init_net.pbtxt")


def deploy_net():
    """The Caffe2 MNIST deploy net, with the softmax as its output (the file lists none)."""
    net = load_net(DEPLOY)
    net.external_output.append("softmax")
    return net


def given_tensor_init(params, name="init"):
    """An init net of GivenTensorFills (what a saved Caffe2 init_net.pb holds)."""
    net = caffe2_pb2.NetDef()
    net.name = name
    for blob, value in params.items():
        net.op.add().CopyFrom(core.CreateOperator(
            "GivenTensorFill", [], [blob], shape=list(value.shape),
            values=value.astype(np.float32).flatten().tolist()))
    return net


def lenet_params(seed):
    """LeNet parameters from the LeNet init net (XavierFill), made in a scratch workspace."""
    caller = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace("scratch_%d" % seed, True)
    try:
        init = load_net(LENET_INIT)
        init.device_option.random_seed = seed
        workspace.RunNetOnce(init)
        params = {op.output[0]: workspace.FetchBlob(op.output[0]) for op in init.op}
        rng = np.random.RandomState(seed)
        for name in params:  # the init net makes zero biases: make them count
            if name.endswith("_b"):
                params[name] = rng.uniform(-0.1, 0.1, params[name].shape).astype(np.float32)
        workspace.ResetWorkspace()
    finally:
        workspace.SwitchWorkspace(caller)
    return params


@pytest.fixture(scope="module")
def params():
    return lenet_params(1)


def images(n, seed=0):
    return np.random.RandomState(seed).rand(n, 1, 28, 28).astype(np.float32)


def reference(init, predict, feeds):
    """The outputs of running the nets through the workspace directly (in a scratch one)."""
    caller = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace("reference", True)
    try:
        workspace.ResetWorkspace()
        workspace.RunNetOnce(init)
        for name, value in feeds.items():
            workspace.FeedBlob(name, value)
        workspace.RunNetOnce(predict)
        return [workspace.FetchBlob(b) for b in predict.external_output]
    finally:
        workspace.SwitchWorkspace(caller)


# ---- a real net ----------------------------------------------------------------------------------

def test_caffe2_deploy_net_matches_the_workspace(tmp_path, params):
    init = given_tensor_init(params)
    init_path = tmp_path / "init_net.pb"
    init_path.write_bytes(init.SerializeToString())
    predict_path = tmp_path / "predict_net.pbtxt"
    predict_path.write_text(text_format.MessageToString(deploy_net()))

    p = predictor.Predictor(str(init_path), str(predict_path))
    assert p.input_names == ["data"]
    assert p.output_names == ["softmax"]
    for n in [1, 3, 5]:  # several runs, batch sizes changing
        x = images(n, seed=n)
        out = p.run([x])
        assert isinstance(out, list) and len(out) == 1
        assert out[0].shape == (n, 10) and out[0].dtype == np.float32
        np.testing.assert_allclose(out[0].sum(axis=1), 1, rtol=1e-5)
        expected, = reference(init, deploy_net(), {"data": x})
        np.testing.assert_allclose(out[0], expected, rtol=1e-6, atol=1e-7)
    # The outputs depend on the input (a constant output would pass the comparison too).
    a, = p.run([images(2, seed=10)])
    b, = p.run([images(2, seed=11)])
    assert np.abs(a - b).max() > 1e-4


def test_list_dict_and_call_agree(params):
    p = predictor.Predictor(given_tensor_init(params), deploy_net())
    x = images(4)
    by_list, = p.run([x])
    by_tuple, = p.run((x,))
    by_dict, = p.run({"data": x})
    by_call, = p([x])
    np.testing.assert_array_equal(by_list, by_dict)
    np.testing.assert_array_equal(by_list, by_tuple)
    np.testing.assert_array_equal(by_list, by_call)


def test_every_way_of_giving_nets(tmp_path, params):
    init = given_tensor_init(params)
    predict = deploy_net()
    x = images(2)
    expected, = reference(init, predict, {"data": x})
    (tmp_path / "i.pb").write_bytes(init.SerializeToString())
    (tmp_path / "p.pb").write_bytes(predict.SerializeToString())
    (tmp_path / "p_text.pb").write_text(text_format.MessageToString(predict))  # text named .pb
    (tmp_path / "p_noext").write_bytes(predict.SerializeToString())
    ways = [
        (init, predict),
        (core.Net(init), core.Net(predict)),
        (init.SerializeToString(), predict.SerializeToString()),
        (str(tmp_path / "i.pb"), str(tmp_path / "p.pb")),
        (tmp_path / "i.pb", tmp_path / "p_text.pb"),  # os.PathLike
        (init.SerializeToString(), str(tmp_path / "p_noext")),
    ]
    for init_net, predict_net in ways:
        out, = predictor.Predictor(init_net, predict_net).run([x])
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)
    # The NetDefs given are not changed (a Predictor works on copies).
    assert predict == deploy_net()


def test_inputs_follow_external_input_order_without_parameters(tmp_path):
    # d = FC(x, w, bias) - y: inputs x and y, around the parameters.
    net = core.Net("sub")
    fc = net.FC(["x", "w", "bias"], "fc")
    net.Sub([fc, "y"], "d")
    net.AddExternalOutput("d")
    assert [str(b) for b in net.external_inputs] == ["x", "w", "bias", "y"]
    rng = np.random.RandomState(0)
    w = rng.randn(3, 4).astype(np.float32)
    bias = rng.randn(3).astype(np.float32)
    init_path = tmp_path / "init_net.pbtxt"  # a text init net
    init_path.write_text(text_format.MessageToString(given_tensor_init({"w": w, "bias": bias})))
    p = predictor.Predictor(str(init_path), net)
    assert p.input_names == ["x", "y"]
    x = rng.randn(2, 4).astype(np.float32)
    y = rng.randn(2, 3).astype(np.float32)
    expected = x.dot(w.T) + bias - y
    np.testing.assert_allclose(p.run([x, y])[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.run({"y": y, "x": x})[0], expected, rtol=1e-5, atol=1e-6)


def test_several_outputs_in_external_output_order(params):
    net = deploy_net()
    net.external_output[:] = ["pred", "softmax", "pool1"]
    out = predictor.Predictor(given_tensor_init(params), net).run([images(2)])
    assert [o.shape for o in out] == [(2, 10), (2, 10), (2, 20, 12, 12)]
    e = np.exp(out[0] - out[0].max(axis=1, keepdims=True))
    np.testing.assert_allclose(out[1], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


# ---- the caller's workspace -------------------------------------------------------------------

def test_callers_workspace_is_untouched(params):
    workspace.SwitchWorkspace("mine", True)
    workspace.ResetWorkspace()
    # Blobs named like the Predictor's input and parameters, and a net.
    mine = {"data": np.full((1, 1, 28, 28), 7, np.float32),
            "conv1_w": np.arange(4, dtype=np.float32), "other": np.array([1, 2], np.int64)}
    for name, value in mine.items():
        workspace.FeedBlob(name, value)
    mlp = load_net(os.path.join(REPO, "tests", "fixtures", "mlp_net.pbtxt"))
    workspace.CreateNet(core.Net(mlp),
                        input_blobs=["fc1_w", "fc1_b", "fc2_w", "fc2_b"])
    blobs, nets = sorted(workspace.Blobs()), workspace.Nets()

    p = predictor.Predictor(given_tensor_init(params), deploy_net())
    assert workspace.CurrentWorkspace() == "mine"
    p.run([images(2)])
    assert workspace.CurrentWorkspace() == "mine"
    with pytest.raises(halfcaf.EnforceNotMet):
        p.run([np.zeros((2, 3), np.float32)])  # fails inside the net
    assert workspace.CurrentWorkspace() == "mine"
    with pytest.raises(ValueError):
        p.run([])
    assert workspace.CurrentWorkspace() == "mine"

    assert sorted(workspace.Blobs()) == blobs and workspace.Nets() == nets
    for name, value in mine.items():
        np.testing.assert_array_equal(workspace.FetchBlob(name), value)
    assert p.workspace_name in workspace.Workspaces() and p.workspace_name != "mine"
    workspace.SwitchWorkspace("default")


def test_predictors_have_their_own_parameters():
    p1 = predictor.Predictor(given_tensor_init(lenet_params(1)), deploy_net())
    p2 = predictor.Predictor(given_tensor_init(lenet_params(2)), deploy_net())
    assert p1.workspace_name != p2.workspace_name
    x = images(2)
    a1, = p1.run([x])
    a2, = p2.run([x])
    assert np.abs(a1 - a2).max() > 1e-4
    np.testing.assert_array_equal(p1.run([x])[0], a1)


def test_close_and_context_manager(params):
    with predictor.Predictor(given_tensor_init(params), deploy_net()) as p:
        p.run([images(1)])
        name = p.workspace_name
    workspace.SwitchWorkspace(name)
    assert workspace.Blobs() == [] and workspace.Nets() == []
    workspace.SwitchWorkspace("default")
    with pytest.raises(RuntimeError, match="closed"):
        p.run([images(1)])
    p.close()  # twice is fine


def test_workspace_cleared_under_the_predictor(params):
    p = predictor.Predictor(given_tensor_init(params), deploy_net())
    halfcaf._C.clear_workspaces()
    workspace.SwitchWorkspace("default", True)
    with pytest.raises(RuntimeError, match="workspace .* is gone"):
        p.run([images(1)])
    assert workspace.CurrentWorkspace() == "default"
    assert p.workspace_name not in workspace.Workspaces()


def test_named_workspace_and_device_option(params):
    cpu = core.DeviceOption(caffe2_pb2.CPU)
    p = predictor.Predictor(given_tensor_init(params), deploy_net(), device_option=cpu,
                            workspace_name="my_predictor")
    assert p.workspace_name == "my_predictor"
    assert all(op.device_option.device_type == caffe2_pb2.CPU for op in p.predict_net.op)
    assert p.predict_net.HasField("device_option")
    out, = p.run([images(2)])
    expected, = reference(given_tensor_init(params), deploy_net(), {"data": images(2)})
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)
    # The caller's DeviceScope does not move the inputs off the net's device.
    from halfcaf import scope
    init = given_tensor_init(params)  # (ops made inside the scope would be on CUDA)
    with scope.DeviceScope(core.DeviceOption(caffe2_pb2.CUDA, 0)):
        plain = predictor.Predictor(init, deploy_net())
        np.testing.assert_allclose(plain.run([images(2)])[0], expected, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="exists already"):
        predictor.Predictor(given_tensor_init(params), deploy_net(), workspace_name="my_predictor")


# ---- errors --------------------------------------------------------------------------------------

def test_bad_inputs_raise_clear_errors(params):
    p = predictor.Predictor(given_tensor_init(params), deploy_net())
    x = images(1)
    with pytest.raises(ValueError, match=r"takes 1 input\(s\) \['data'\], got 2"):
        p.run([x, x])
    with pytest.raises(ValueError, match="got 0"):
        p.run([])
    with pytest.raises(KeyError, match="'dat' is not an input .* inputs are \\['data'\\]"):
        p.run({"dat": x})
    with pytest.raises(KeyError, match="no value for input"):
        p.run({})
    with pytest.raises(TypeError, match="list of arrays"):
        p.run(x)
    with pytest.raises(halfcaf.EnforceNotMet, match="Conv"):
        p.run([np.zeros((2, 3), np.float32)])
    # Still usable after the errors.
    assert p.run([x])[0].shape == (1, 10)


def test_bad_nets_raise_clear_errors(tmp_path, params):
    init = given_tensor_init(params)
    with pytest.raises(FileNotFoundError, match="init_net: file .*missing.pb does not exist"):
        predictor.Predictor(str(tmp_path / "missing.pb"), deploy_net())
    with pytest.raises(FileNotFoundError, match="predict_net"):
        predictor.Predictor(init, str(tmp_path / "missing.pbtxt"))
    with pytest.raises(IsADirectoryError):
        predictor.Predictor(init, str(tmp_path))
    garbage = tmp_path / "garbage.pb"
    garbage.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match="neither in binary nor in text"):
        predictor.Predictor(init, str(garbage))
    bad_text = tmp_path / "bad.pbtxt"
    bad_text.write_text("op { type: \"Relu\" bogus: 1 }")
    with pytest.raises(ValueError, match="text format"):
        predictor.Predictor(init, str(bad_text))
    empty = tmp_path / "empty.pb"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        predictor.Predictor(init, str(empty))
    with pytest.raises(ValueError, match="not a serialized NetDef"):
        predictor.Predictor(b"\xff\xff\xff\xff", deploy_net())
    with pytest.raises(TypeError, match="expected a NetDef"):
        predictor.Predictor(42, deploy_net())
    no_output = load_net(DEPLOY)
    with pytest.raises(ValueError, match="no external_output"):
        predictor.Predictor(init, no_output)


def test_failing_nets_leave_no_trace(params):
    workspace.FeedBlob("keep", np.ones(3, np.float32))
    before = set(workspace.Workspaces())
    bad_init = given_tensor_init(params)
    bad_init.op.add().CopyFrom(core.CreateOperator("NoSuchOperator", [], ["x"]))
    with pytest.raises(halfcaf.EnforceNotMet, match="NoSuchOperator"):
        predictor.Predictor(bad_init, deploy_net())
    bad_predict = deploy_net()
    bad_predict.op.add().CopyFrom(core.CreateOperator("NoSuchOperator", ["softmax"], ["y"]))
    with pytest.raises(halfcaf.EnforceNotMet, match="NoSuchOperator"):
        predictor.Predictor(given_tensor_init(params), bad_predict)  # fails after init ran
    assert workspace.CurrentWorkspace() == "default"
    assert workspace.Blobs() == ["keep"]
    # The failed Predictors' workspaces are emptied (the runtime cannot delete one).
    new = set(workspace.Workspaces()) - before
    assert len(new) == 2
    for name in new:
        workspace.SwitchWorkspace(name)
        assert workspace.Blobs() == [] and workspace.Nets() == [], name
    workspace.SwitchWorkspace("default")


def test_no_crash_at_exit_with_a_live_predictor(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    script = (
        "import numpy as np\n"
        "from halfcaf import core, predictor\n"
        "init = core.Net('init'); init.GivenTensorFill([], 'w', shape=[2, 2], "
        "values=[1., 2., 3., 4.])\n"
        "net = core.Net('p'); net.MatMul(['x', 'w'], 'y'); net.AddExternalOutput('y')\n"
        "p = predictor.Predictor(init, net)\n"
        "print(p.run([np.eye(2, dtype=np.float32)])[0].tolist())\n")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[[1.0, 2.0], [3.0, 4.0]]"


# ---- the inference optimizer -------------------------------------------------------------------

def test_optimize_keeps_the_outputs_of_the_caffe2_net(params):
    init = given_tensor_init(params)
    plain = predictor.Predictor(init, deploy_net())
    fast = predictor.Predictor(init, deploy_net(), optimize=True)
    assert plain.optimize_summary is None
    assert "2 ConvFusion" in fast.optimize_summary
    types = [op.type for op in fast.predict_net.op]
    assert "Conv" not in types and types.count("ConvFusion") == 2
    for n in [1, 4]:
        x = images(n, seed=20 + n)
        a, = plain.run([x])
        b, = fast.run({"data": x})
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)


def test_optimize_folds_batch_norm_and_fuses_relu():
    rng = np.random.RandomState(3)
    net = core.Net("bn_net")
    conv = net.Conv(["data", "conv_w", "conv_b"], "conv", kernel=3, pad=1)
    bn = net.SpatialBN([conv, "bn_scale", "bn_bias", "bn_mean", "bn_var"], "bn", is_test=1,
                       epsilon=1e-5)
    relu = net.Relu(bn, "relu")
    pool = net.MaxPool(relu, "pool", kernel=2, stride=2)
    pred = net.FC([pool, "fc_w", "fc_b"], "pred")
    net.Softmax(pred, "softmax")
    net.AddExternalOutput("softmax")
    params = {"conv_w": rng.randn(4, 2, 3, 3) * 0.3, "conv_b": rng.randn(4) * 0.1,
              "bn_scale": rng.uniform(0.5, 1.5, 4), "bn_bias": rng.randn(4) * 0.1,
              "bn_mean": rng.randn(4) * 0.1, "bn_var": rng.uniform(0.5, 2.0, 4),
              "fc_w": rng.randn(3, 4 * 4 * 4) * 0.2, "fc_b": rng.randn(3) * 0.1}
    init = given_tensor_init(params)
    plain = predictor.Predictor(init, net)
    fast = predictor.Predictor(init, net, optimize=True)
    assert "1 SpatialBN folded" in fast.optimize_summary
    assert "1 with Relu" in fast.optimize_summary
    types = [op.type for op in fast.predict_net.op]
    assert "SpatialBN" not in types and "Relu" not in types and "ConvFusion" in types
    x = rng.randn(5, 2, 8, 8).astype(np.float32)
    a, = plain.run([x])
    b, = fast.run([x])
    assert a.shape == (5, 3)
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)
    # The unoptimized net's outputs are those of the workspace run directly.
    expected, = reference(init, net.Proto(), {"data": x})
    np.testing.assert_allclose(a, expected, rtol=1e-6, atol=1e-7)
