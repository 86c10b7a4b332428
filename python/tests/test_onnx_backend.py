"""halfcaf.onnx.backend: ONNX's backend API over halfcaf (prepare / run / run_node), checked
against NumPy on small models, and ONNX's own backend test runner over its node tests."""
import collections
import functools
import gc
import io
import re
import unittest

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import halfcaf  # noqa: E402
from halfcaf import _C, workspace  # noqa: E402

if not _C.onnx_available():
    pytest.skip("halfcaf was built without ONNX (libonnx-dev)", allow_module_level=True)

import onnx.backend.test  # noqa: E402

from halfcaf.onnx import backend, backend_rep  # noqa: E402
from halfcaf.onnx.backend import HalfcafBackend, Unsupported  # noqa: E402

# At least what the C++ conformance runner (tests/onnx/onnx_conformance_test.cc) passed of the
# node tests when this backend was written; it checks the four random training-mode Dropout
# cases, which test_training_dropout checks here, by their properties.
MIN_NODE_PASSES = 360


def _refusal_fails(test):
    """Unsupported is a unittest.SkipTest (for ONNX's runner): here a refusal the test does not
    expect fails the test instead of skipping it."""
    @functools.wraps(test)
    def wrapped(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except Unsupported as e:
            pytest.fail("halfcaf refused: %s" % e)
    return wrapped


def _model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _float(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _relu_gemm():
    """y = 0.5 * relu(x) @ w + b, with w, b initializers and a symbolic batch."""
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    b = np.array([1, -2, 3], np.float32)
    model = _model(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Gemm", ["r", "w", "b"], ["y"], alpha=0.5)],
        [_float("x", ["N", 4])], [_float("y", ["N", 3])],
        [helper.make_tensor("w", TensorProto.FLOAT, [4, 3], w.ravel()),
         helper.make_tensor("b", TensorProto.FLOAT, [3], b)])
    return model, (lambda x: 0.5 * np.maximum(x, 0) @ w + b)


# ---- prepare / run ------------------------------------------------------------------------------

@_refusal_fails
def test_prepare_run_matches_numpy():
    model, reference = _relu_gemm()
    rep = backend.prepare(model)
    rng = np.random.RandomState(0)
    for batch in (2, 5, 2):  # a new batch size imports anew; going back reuses the first
        x = rng.randn(batch, 4).astype(np.float32)
        out = rep.run([x])
        assert len(out) == 1 and out._fields == ("y",)
        np.testing.assert_allclose(out[0], reference(x), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out["y"], out.y)
    assert len(rep._variants) == 2


@_refusal_fails
def test_model_as_bytes_and_run_model():
    model, reference = _relu_gemm()
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(backend.prepare(model.SerializeToString()).run(x)[0],
                               reference(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(backend.run_model(model, [x]).y, reference(x), rtol=1e-5,
                               atol=1e-6)


@_refusal_fails
def test_shape_arithmetic_folds_per_batch_size():
    # y = Reshape(x, [Shape(x)[0], -1]) and z = x + ConstantOfShape(Shape(x)): the shape and the
    # constant (an init net blob) fold at import, differently per batch size.
    model = _model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
         helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
         helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"]),
         helper.make_node("ConstantOfShape", ["s"], ["c"],
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5])),
         helper.make_node("Add", ["x", "c"], ["z"])],
        [_float("x", ["N", 2, 3])], [_float("y", ["N", 6]), _float("z", ["N", 2, 3])],
        [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
         helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
         helper.make_tensor("minus_one", TensorProto.INT64, [1], [-1])])
    rep = backend.prepare(model)
    for batch in (2, 5, 2, 5):
        x = np.arange(batch * 6, dtype=np.float32).reshape(batch, 2, 3)
        y, z = rep.run([x])
        assert y.shape == (batch, 6)
        np.testing.assert_array_equal(y, x.reshape(batch, 6))
        np.testing.assert_array_equal(z, x + 1.5)
    assert len(rep._variants) == 2


@_refusal_fails
def test_list_dict_and_single_inputs():
    model = _model([helper.make_node("Sub", ["a", "b"], ["d"]),
                    helper.make_node("Mul", ["a", "b"], ["p"])],
                   [_float("a", [2, 3]), _float("b", [2, 3])],
                   [_float("d", [2, 3]), _float("p", [2, 3])])
    rep = backend.prepare(model)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 10, np.float32)
    for out in (rep.run([a, b]), rep.run((a, b)), rep.run({"b": b, "a": a})):
        np.testing.assert_array_equal(out.d, a - b)
        np.testing.assert_array_equal(out["p"], a * b)
        np.testing.assert_array_equal(out[1], a * b)
    single = _model([helper.make_node("Neg", ["x"], ["y"])], [_float("x", [3])], [_float("y", [3])])
    np.testing.assert_array_equal(backend.prepare(single).run(np.ones(3, np.float32))[0],
                                  -np.ones(3, np.float32))


@_refusal_fails
def test_wrong_inputs_raise_clearly():
    model, _ = _relu_gemm()
    rep = backend.prepare(model)
    x = np.ones((2, 4), np.float32)
    with pytest.raises(ValueError, match="1 inputs"):
        rep.run([x, x])
    with pytest.raises(ValueError, match="no graph input named 'z'"):
        rep.run({"x": x, "z": x})
    with pytest.raises(ValueError, match="not given"):
        rep.run({})
    with pytest.raises(TypeError, match="input 'x' is float32 in the model.*float64"):
        rep.run([x.astype(np.float64)])


@_refusal_fails
def test_initializers_are_not_inputs():
    # A graph input with an initializer (a default) is not among the inputs run takes.
    model, reference = _relu_gemm()
    model.graph.input.extend([_float("w", [4, 3]), _float("b", [3])])
    rep = backend.prepare(model)
    assert rep.input_names == ["x"]
    x = np.ones((1, 4), np.float32)
    np.testing.assert_allclose(rep.run([x]).y, reference(x), rtol=1e-6)


@_refusal_fails
def test_inputs_fixed_at_import_per_value():
    # Clip's min and max are inputs that halfcaf needs as constants: each run's values are fixed
    # at import, and other values import anew.
    model = _model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                   [_float("x", [7]), _float("lo", []), _float("hi", [])], [_float("y", [7])])
    rep = backend.prepare(model)
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    for lo, hi in ((-1, 1), (0, 2), (-1, 1)):
        y = rep.run([x, np.float32(lo), np.float32(hi)]).y
        np.testing.assert_array_equal(y, np.clip(x, lo, hi))
    assert sorted(rep._fixed) == ["hi", "lo"]
    assert len(rep._variants) == 2


@_refusal_fails
def test_bfloat16_inputs_and_outputs_are_bit_patterns():
    to_bf16 = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)],
                     [_float("x", [4])],
                     [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4])])
    # 1 + 2^-8 and 1 + 3 * 2^-8 lie halfway between bfloat16 values: rounded to the even one.
    x = np.array([3.0, 1.00390625, 1.01171875, -2.5], np.float32)
    y = backend.prepare(to_bf16).run([x]).y
    assert y.dtype == np.uint16
    np.testing.assert_array_equal(y, np.array([0x4040, 0x3F80, 0x3F82, 0xC020], np.uint16))

    from_bf16 = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
                       [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
                       [_float("y", [3])])
    rep = backend.prepare(from_bf16)
    bits = np.array([0x3F80, 0x4049, 0xC000], np.uint16)
    np.testing.assert_array_equal(rep.run([bits]).y, np.array([1.0, 3.140625, -2.0], np.float32))
    np.testing.assert_array_equal(rep.run([np.array([1.0, 3.140625, -2.0], np.float32)]).y,
                                  np.array([1.0, 3.140625, -2.0], np.float32))


@_refusal_fails
def test_training_dropout():
    # Random, so not comparable with ONNX's reference outputs: Y is 0 or X / (1 - ratio), the
    # mask says which, and about 1 - ratio of the elements are kept.
    model = _model([helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])],
                   [_float("x", [100, 100]), _float("r", []),
                    helper.make_tensor_value_info("t", TensorProto.BOOL, [])],
                   [_float("y", [100, 100]),
                    helper.make_tensor_value_info("mask", TensorProto.BOOL, [100, 100])])
    x = np.random.RandomState(1).uniform(1, 2, (100, 100)).astype(np.float32)
    y, mask = backend.prepare(model).run([x, np.float32(0.25), np.bool_(True)])
    assert mask.dtype == np.bool_
    np.testing.assert_allclose(y, np.where(mask, x / 0.75, 0), rtol=1e-6)
    kept = mask.mean()
    assert abs(kept - 0.75) < 5 * np.sqrt(0.75 * 0.25 / x.size), kept


# ---- run_node -----------------------------------------------------------------------------------

@_refusal_fails
def test_run_node():
    x = np.array([[-1.5, 0, 2]], np.float32)
    out = backend.run_node(helper.make_node("Relu", ["x"], ["y"]), [x])
    np.testing.assert_array_equal(out.y, np.maximum(x, 0))
    # dict inputs, broadcasting, an input used twice, and the outputs' types given
    b = np.array([10, 20, 30], np.float32)
    out = backend.run_node(helper.make_node("Add", ["x", "b"], ["s"]), {"b": b, "x": x},
                           outputs_info=[(np.float32, (1, 3))])
    np.testing.assert_array_equal(out.s, x + b)
    out = backend.run_node(helper.make_node("Mul", ["x", "x"], ["sq"]), [x])
    np.testing.assert_array_equal(out["sq"], x * x)
    # an older opset: Clip-6 takes min and max as attributes
    out = backend.run_node(helper.make_node("Clip", ["x"], ["y"], min=-1.0, max=1.0), [x],
                           opset_version=6)
    np.testing.assert_array_equal(out.y, np.clip(x, -1, 1))
    # integer data
    i = np.array([[1, -2], [3, 4]], np.int64)
    np.testing.assert_array_equal(
        backend.run_node(helper.make_node("Transpose", ["i"], ["t"]), [i]).t, i.T)


@_refusal_fails
def test_run_node_errors():
    with pytest.raises(ValueError, match="2 inputs"):
        backend.run_node(helper.make_node("Add", ["a", "b"], ["c"]), [np.ones(2, np.float32)])
    with pytest.raises(onnx.checker.ValidationError):
        backend.run_node(helper.make_node("NoSuchOperator", ["a"], ["b"]),
                         [np.ones(2, np.float32)])


# ---- refusals and bad models --------------------------------------------------------------------

@_refusal_fails
def test_bad_models_raise_clearly():
    with pytest.raises(ValueError, match="not an ONNX ModelProto"):
        backend.prepare(b"not a model")
    with pytest.raises(TypeError, match="ModelProto"):
        backend.prepare(42)
    unknown = _model([helper.make_node("NoSuchOperator", ["x"], ["y"])], [_float("x", [2])],
                     [_float("y", [2])])
    with pytest.raises(onnx.checker.ValidationError, match="NoSuchOperator"):
        backend.prepare(unknown)
    dangling = _model([helper.make_node("Relu", ["nowhere"], ["y"])], [_float("x", [2])],
                      [_float("y", [2])])
    with pytest.raises(onnx.checker.ValidationError, match="nowhere"):
        backend.prepare(dangling)


@_refusal_fails
def test_what_halfcaf_cannot_do_is_unsupported():
    # An ONNX operator halfcaf's importer does not take: refused with the node named.
    model = _model([helper.make_node("Mod", ["a", "b"], ["c"], name="the_mod")],
                   [helper.make_tensor_value_info(n, TensorProto.INT32, [3]) for n in "ab"],
                   [helper.make_tensor_value_info("c", TensorProto.INT32, [3])])
    rep = backend.prepare(model)  # imported when it runs
    a = np.array([5, 7, 9], np.int32)
    with pytest.raises(Unsupported, match=r"the_mod.*Mod.*not supported") as info:
        rep.run([a, a])
    assert isinstance(info.value, unittest.SkipTest)  # ONNX's runner skips it
    assert isinstance(info.value.__cause__, halfcaf.OnnxUnsupported)
    # An operator refusing its input at run time.
    with pytest.raises(Unsupported, match=r"run: .*Gather.*out of range") as info:
        backend.run_node(helper.make_node("Gather", ["d", "i"], ["y"]),
                         [np.ones((3, 2), np.float32), np.array([5], np.int64)])
    assert isinstance(info.value.__cause__, halfcaf.EnforceNotMet)
    # A graph input that is not a tensor.
    seq = helper.make_graph(
        [helper.make_node("SequenceLength", ["s"], ["n"])], "seq",
        [helper.make_value_info("s", helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    rep = backend.prepare(helper.make_model(seq, opset_imports=[helper.make_opsetid("", 13)]))
    with pytest.raises(Unsupported, match="'s' is not a tensor"):
        rep.run([[np.ones(2, np.float32)]])


@_refusal_fails
def test_devices():
    assert backend.supports_device("CPU")
    assert not backend.supports_device("TPU")
    has_gpu = bool(workspace.has_cuda_support) and workspace.NumCudaDevices() > 0
    assert backend.supports_device("CUDA") == has_gpu
    assert not backend.supports_device("CUDA:%d" % (workspace.NumCudaDevices() + 1))
    model, _ = _relu_gemm()
    with pytest.raises(ValueError, match="unknown device"):
        backend.prepare(model, device="TPU")
    if not has_gpu:
        with pytest.raises(RuntimeError, match="cannot run on CUDA"):
            backend.prepare(model, device="CUDA")


# ---- workspaces ---------------------------------------------------------------------------------

@_refusal_fails
def test_callers_workspace_is_untouched():
    model, reference = _relu_gemm()
    x = np.ones((2, 4), np.float32)
    for name in ("default", "mine"):
        workspace.SwitchWorkspace(name, True)
        workspace.FeedBlob("x", np.array([7.0], np.float32))  # the model's input and output
        workspace.FeedBlob("y", np.array([8.0], np.float32))  # names, in the caller's workspace
        rep = backend.prepare(model)
        np.testing.assert_allclose(rep.run([x]).y, reference(x), rtol=1e-6)
        with pytest.raises(Unsupported):  # also when the run fails
            backend.run_node(helper.make_node("Gather", ["d", "i"], ["g"]),
                             [np.ones((3, 2), np.float32), np.array([5], np.int64)])
        assert workspace.CurrentWorkspace() == name
        assert sorted(workspace.Blobs()) == ["x", "y"]
        assert workspace.FetchBlob("x")[0] == 7.0 and workspace.FetchBlob("y")[0] == 8.0
        assert rep.workspace_name != name
    workspace.SwitchWorkspace("default")


@_refusal_fails
def test_private_workspaces_are_emptied_and_reused():
    model, reference = _relu_gemm()
    rep = backend.prepare(model)
    rep.run([np.ones((1, 4), np.float32)])
    name = rep.workspace_name
    workspace.SwitchWorkspace(name)
    assert "w" in workspace.Blobs() and workspace.Nets()
    workspace.SwitchWorkspace("default")
    del rep
    gc.collect()
    assert name in backend_rep._free_workspaces
    workspace.SwitchWorkspace(name)
    assert workspace.Blobs() == [] and workspace.Nets() == []
    workspace.SwitchWorkspace("default")
    free = list(backend_rep._free_workspaces)
    rep = backend.prepare(model)
    assert rep.workspace_name == free[-1] and len(backend_rep._free_workspaces) == len(free) - 1
    name = rep.workspace_name
    x = np.full((1, 4), 2, np.float32)
    np.testing.assert_allclose(rep.run([x]).y, reference(x), rtol=1e-6)
    # A rep whose workspace was emptied behind its back sets it up again.
    workspace.SwitchWorkspace(name)
    workspace.ResetWorkspace()
    workspace.SwitchWorkspace("default")
    np.testing.assert_allclose(rep.run([x]).y, reference(x), rtol=1e-6)


# ---- ONNX's backend test runner over its node tests ---------------------------------------------

class _Recorder(object):
    """Which test is running, and which of them halfcaf refused (ONNX's runner counts a refusal
    as a pass, having caught BackendIsNotSupposedToImplementIt itself)."""

    def __init__(self):
        self.current = None
        self.refused = {}

    def backend(self):
        recorder = self

        class Rep(object):
            def __init__(self, rep):
                self.rep = rep

            def run(self, inputs, **kwargs):
                try:
                    return self.rep.run(inputs, **kwargs)
                except Unsupported as e:
                    recorder.refused[recorder.current] = str(e)
                    raise

        class RecordingBackend(HalfcafBackend):
            @classmethod
            def prepare(cls, model, device="CPU", **kwargs):
                return Rep(super(RecordingBackend, cls).prepare(model, device, **kwargs))

        return RecordingBackend

    def result_class(self):
        recorder = self

        class Result(unittest.TextTestResult):
            def startTest(self, test):
                recorder.current = test.id()
                super(Result, self).startTest(test)

        return Result


def _run_node_tests(device):
    # ONNX 1.12's runner compares with `np.object`, which NumPy 1.24 no longer has.
    restore = "object" not in vars(np)
    np.object = object
    try:
        return _run_suite(device)
    finally:
        if restore:
            del np.object


def _run_suite(device):
    recorder = _Recorder()
    tests = onnx.backend.test.BackendTest(recorder.backend(), __name__)
    # Training-mode Dropout with a ratio > 0 is random: test_training_dropout checks it instead.
    tests.exclude(r"^test_training_dropout(_default)?(_mask)?_(cpu|cuda)$")
    case = tests.test_cases["OnnxBackendNodeModelTest"]
    suffix = "_" + device.lower()
    names = [n for n in unittest.defaultTestLoader.getTestCaseNames(case) if n.endswith(suffix)]
    assert len(names) > 900, len(names)
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0,
                                     resultclass=recorder.result_class()).run(
        unittest.TestSuite(case(n) for n in names))
    wrong = ["%s\n%s" % (t.id().split(".")[-1], tb.strip().splitlines()[-1])
             for t, tb in result.failures + result.errors]
    skipped = len(result.skipped)
    refused = len(recorder.refused)
    passed = result.testsRun - len(result.failures) - len(result.errors) - skipped - refused
    reasons = collections.Counter(
        re.sub(r" \[[^\]]*\]$", "", re.sub(r"^.*model\.onnx: |node '[^']*' ", "",
                                           why.splitlines()[0]))[:90]
        for why in recorder.refused.values())
    print("ONNX node tests (%s): %d pass, %d refused by halfcaf, %d skipped, %d wrong"
          % (device, passed, refused, skipped, len(wrong)))
    for why, n in reasons.most_common(10):
        print("  %4d  %s" % (n, why))
    assert not wrong, "%d wrong answers:\n%s" % (len(wrong), "\n".join(wrong))
    assert not result.unexpectedSuccesses and not result.expectedFailures
    return passed


@_refusal_fails
def test_onnx_node_tests_cpu():
    assert _run_node_tests("CPU") >= MIN_NODE_PASSES
    assert workspace.CurrentWorkspace() == "default" and workspace.Blobs() == []


@pytest.mark.skipif(not backend.supports_device("CUDA"), reason="no CUDA device")
@_refusal_fails
def test_onnx_node_tests_cuda():
    assert _run_node_tests("CUDA") > 0
