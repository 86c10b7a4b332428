"""HalfcafRep: a prepared ONNX model that runs in halfcaf (what ``HalfcafBackend.prepare``
returns).

The model is imported lazily, once per input signature: at run time the shapes of the given
arrays are known, so they go to the importer as the graph inputs' dims and shape arithmetic folds.
Each imported variant (init net + predict net) is cached by the inputs' shapes and dtypes. When
the importer says an input must be a constant ("input 'scales' is computed at run time"), that
input is fixed to the value given in this run and the import retried; such variants are cached
by those values too.

Nets run in a workspace of the rep's own, so the caller's current workspace is never disturbed.

bfloat16: NumPy has no bfloat16, so a BFLOAT16 graph input takes uint16 arrays (the bit
patterns, as ONNX's test data stores them) or float32 arrays (rounded to nearest even), and a
bfloat16 output comes back as uint16 bit patterns (what ONNX's backend test runner compares).
"""
import collections
import itertools
import re
import weakref

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.backend.base import BackendRep, namedtupledict
from onnx.backend.test.runner import BackendIsNotSupposedToImplementIt

import halfcaf
from halfcaf import _C, workspace
from halfcaf.proto import caffe2_pb2


class Unsupported(BackendIsNotSupposedToImplementIt):
    """halfcaf cannot run this model or node: the importer refused a node, attribute or type, or
    an operator refused its input at run time. The message is halfcaf's reason; ``__cause__`` is
    the original ``halfcaf.EnforceNotMet``. (A ``unittest.SkipTest``, so that ONNX's backend test
    runner counts the case as not implemented rather than failed.)"""


# Imported variants kept per rep (least recently used dropped first).
MAX_VARIANTS = 16

_RUN_TIME_INPUT = re.compile(r"'([^']*)' is computed at run time")


def run_time_input(message):
    """The input a refusal says must be a constant (``... input 'scales' is computed at run
    time ...``), or None."""
    m = _RUN_TIME_INPUT.search(message)
    return m.group(1) if m else None


# ---- private workspaces -------------------------------------------------------------------------
# A rep's workspace is emptied when the rep is collected and its name reused by the next rep, so
# preparing many models does not leave one workspace per model behind.

_free_workspaces = []
_workspace_ids = itertools.count()


def _acquire_workspace():
    if _free_workspaces:
        return _free_workspaces.pop()
    return "__halfcaf_onnx_%d" % next(_workspace_ids)


def _release_workspace(name):
    try:
        current = workspace.CurrentWorkspace()
        if name != current and name in workspace.Workspaces():
            workspace.SwitchWorkspace(name)
            try:
                workspace.ResetWorkspace()
            finally:
                workspace.SwitchWorkspace(current)
        _free_workspaces.append(name)
    except Exception:  # the runtime may already be gone at interpreter exit
        pass


# ---- dtypes -------------------------------------------------------------------------------------

def _np_dtype(elem_type):
    """The NumPy dtype of an ONNX element type, or None (undefined, or none in NumPy)."""
    if elem_type in (TensorProto.UNDEFINED, TensorProto.BFLOAT16):
        return None
    try:
        if hasattr(helper, "tensor_dtype_to_np_dtype"):  # ONNX >= 1.13
            return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
        return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])
    except (KeyError, TypeError, ValueError):
        return None


def bfloat16_bits_to_float32(bits):
    """uint16 bfloat16 bit patterns -> the float32 values they stand for (exactly)."""
    bits = np.ascontiguousarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def float32_to_bfloat16_bits(values):
    """float32 values that are bfloat16 values (as FetchBlob returns a bfloat16 blob) -> their
    uint16 bit patterns."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    return (values.view(np.uint32) >> 16).astype(np.uint16)


class _GraphValue(object):
    """A graph input or output: name, kind ("tensor_type", "sequence_type", ...), ONNX element
    type (UNDEFINED when not a tensor) and static dims (None for a symbolic or missing dim; dims
    None when the rank is unknown)."""

    def __init__(self, value_info):
        self.name = value_info.name
        t = value_info.type
        kind = t.WhichOneof("value")
        self.is_tensor = kind in (None, "tensor_type")
        self.kind = kind
        self.elem_type = t.tensor_type.elem_type if kind == "tensor_type" else TensorProto.UNDEFINED
        self.dims = None
        if kind == "tensor_type" and t.tensor_type.HasField("shape"):
            self.dims = [d.dim_value if d.HasField("dim_value") else None
                         for d in t.tensor_type.shape.dim]


class _Variant(object):
    """One import of the model: its init and predict nets and the predict net's inputs."""

    def __init__(self, init, predict, net_inputs):
        self.init = init
        self.predict = predict
        self.net_inputs = net_inputs


class HalfcafRep(BackendRep):
    """A prepared model: ``run(inputs)`` returns the graph's outputs (a namedtuple that is also
    indexable by output name). ``inputs`` is a list (the graph inputs that are not initializers,
    in order), a dict by input name, or a single array for a one-input graph."""

    def __init__(self, model, model_bytes, device_type=caffe2_pb2.CPU, device_id=0):
        self.model = model
        self._model_bytes = model_bytes
        self._source = model.graph.name or "model"
        initialized = set(t.name for t in model.graph.initializer)
        self.inputs = [_GraphValue(v) for v in model.graph.input if v.name not in initialized]
        self.outputs = [_GraphValue(v) for v in model.graph.output]
        self.input_names = [v.name for v in self.inputs]
        self.output_names = [v.name for v in self.outputs]
        self._outputs_type = namedtupledict("Outputs", self.output_names)
        self._device_option = caffe2_pb2.DeviceOption(device_type=device_type, device_id=device_id)
        self._variants = collections.OrderedDict()  # key -> _Variant, least recently used first
        self._fixed = []  # names of inputs the importer needs as constants
        self._active = None  # the variant whose init ran and whose net is created
        self.workspace_name = _acquire_workspace()
        self._net_name = self.workspace_name + "/predict"  # every variant's, one at a time
        self._finalizer = weakref.finalize(self, _release_workspace, self.workspace_name)
        self._finalizer.atexit = False

    # ---- inputs ---------------------------------------------------------------------------------

    def _bind(self, inputs):
        """The given inputs as {graph input name: ndarray to feed}, in graph order, checked
        against the graph's element types. Their shapes rule over the shapes the model declares
        (as when a model runs with other input sizes): they go to the importer as input dims."""
        if isinstance(inputs, dict):
            unknown = sorted(set(inputs) - set(self.input_names))
            if unknown:
                raise ValueError("no graph input named %s (the inputs are %s)"
                                 % (", ".join(repr(u) for u in unknown), self.input_names))
            missing = [n for n in self.input_names if n not in inputs]
            values = [inputs.get(n) for n in self.input_names]
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) != len(self.inputs):
                raise ValueError("the model has %d inputs %s, %d given"
                                 % (len(self.inputs), self.input_names, len(inputs)))
            missing = []
            values = list(inputs)
        if missing:
            raise ValueError("inputs %s not given (the inputs are %s)"
                             % (missing, self.input_names))
        bound = collections.OrderedDict()
        for info, value in zip(self.inputs, values):
            if not info.is_tensor:
                raise Unsupported("graph input '%s' is not a tensor (%s); halfcaf holds "
                                  "tensors only" % (info.name, info.kind))
            bound[info.name] = self._convert_input(info, value)
        return bound

    @staticmethod
    def _convert_input(info, value):
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
        if info.elem_type == TensorProto.BFLOAT16:
            if array.dtype == np.uint16:
                array = bfloat16_bits_to_float32(array)
            elif array.dtype != np.float32:
                raise TypeError("input '%s' is bfloat16: give uint16 bit patterns or float32 "
                                "values, not %s" % (info.name, array.dtype))
        else:
            want = _np_dtype(info.elem_type)
            if want is not None and array.dtype != want:
                raise TypeError("input '%s' is %s in the model, the array given is %s"
                                % (info.name, want, array.dtype))
        return np.ascontiguousarray(array)

    def _feed_dtype(self, name):
        for info in self.inputs:
            if info.name == name and info.elem_type == TensorProto.BFLOAT16:
                return "bfloat16"
        return None

    # ---- import ---------------------------------------------------------------------------------

    def _key(self, bound):
        shapes = tuple((n, a.shape, a.dtype.str) for n, a in bound.items())
        fixed = tuple((n, bound[n].tobytes()) for n in self._fixed)
        return shapes, fixed

    def _variant(self, bound):
        """The imported variant for these inputs (cached), importing it when new."""
        while True:
            key = self._key(bound)
            variant = self._variants.get(key)
            if variant is not None:
                self._variants.move_to_end(key)
                return variant
            try:
                variant = self._import(bound)
            except halfcaf.OnnxUnsupported as e:
                name = run_time_input(str(e))
                if name in bound and name not in self._fixed:
                    self._fixed.append(name)  # retry with the input fixed to this run's value
                    continue
                raise Unsupported(str(e)) from e
            except halfcaf.EnforceNotMet as e:
                raise Unsupported("import: %s" % e) from e
            self._variants[key] = variant
            while len(self._variants) > MAX_VARIANTS:
                dropped = self._variants.popitem(last=False)[1]
                if dropped is self._active:
                    self._active = None
            return variant

    def _model_for(self, dims):
        """The serialized model, with the declared shapes of the inputs given with another rank
        left out (the importer takes the given dims for a declared shape of the same rank)."""
        other_rank = [v.name for v in self.inputs
                      if v.dims is not None and v.name in dims and len(v.dims) != len(dims[v.name])]
        if not other_rank:
            return self._model_bytes
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        for v in model.graph.input:
            if v.name in other_rank:
                v.type.tensor_type.ClearField("shape")
        return model.SerializeToString()

    def _import(self, bound):
        dims = {n: list(a.shape) for n, a in bound.items() if n not in self._fixed}
        constants = {n: bound[n] for n in self._fixed}
        imported = _C.onnx_import(self._model_for(dims), self._source, dims, 0, constants)
        init = caffe2_pb2.NetDef.FromString(imported["init"])
        predict = caffe2_pb2.NetDef.FromString(imported["predict"])
        predict.name = self._net_name
        init.name = self._net_name + "_init"
        if self._device_option.device_type != caffe2_pb2.CPU:
            for net in (init, predict):
                net.device_option.CopyFrom(self._device_option)
                for op in net.op:
                    if not op.HasField("device_option"):
                        op.device_option.CopyFrom(self._device_option)
        return _Variant(init, predict, [name for name, _, _ in imported["inputs"]])

    # ---- running --------------------------------------------------------------------------------

    def run(self, inputs, **kwargs):
        if kwargs:
            raise TypeError("run() takes no options, got %s" % sorted(kwargs))
        bound = self._bind(inputs)
        variant = self._variant(bound)
        caller = workspace.CurrentWorkspace()
        workspace.SwitchWorkspace(self.workspace_name, True)
        try:
            return self._outputs_type(*self._run(variant, bound))
        finally:
            workspace.SwitchWorkspace(caller)

    def _run(self, variant, bound):
        device = self._device_option
        try:
            if self._active is not variant or self._net_name not in workspace.Nets():
                self._active = None
                workspace.RunNetOnce(variant.init)
                workspace.CreateNet(variant.predict, overwrite=True,
                                    input_blobs=variant.net_inputs)
                self._active = variant
            for name in variant.net_inputs:
                workspace.FeedBlob(name, bound[name], device_option=device,
                                   dtype=self._feed_dtype(name))
            workspace.RunNet(self._net_name)
        except halfcaf.EnforceNotMet as e:
            raise Unsupported("run: %s" % e) from e
        return [self._fetch(info) for info in self.outputs]

    @staticmethod
    def _fetch(info):
        if not workspace.HasBlob(info.name):
            raise RuntimeError("halfcaf's net did not produce the graph output '%s'" % info.name)
        value = workspace.FetchBlob(info.name)
        if workspace.BlobInfo(info.name)[0] == "bfloat16":
            value = float32_to_bfloat16_bits(value)
        return value
