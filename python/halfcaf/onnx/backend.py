"""halfcaf's ONNX backend (Caffe2's caffe2.python.onnx.backend), implementing ONNX's backend API:

    import halfcaf.onnx.backend as backend
    rep = backend.prepare(onnx_model)            # a ModelProto, its bytes, or a file path
    outputs = rep.run([x])                       # or rep.run({"input": x})
    outputs[0], outputs["output"]

    backend.run_node(onnx.helper.make_node("Relu", ["x"], ["y"]), [x])
    backend.run_model(onnx_model, [x])
    backend.supports_device("CUDA")

The model is checked with ONNX's checker, then imported by halfcaf's C++ importer
(``halfcaf._C.onnx_import``) when it first runs, per input signature (see backend_rep.py).
What halfcaf cannot do raises ``halfcaf.onnx.backend.Unsupported`` (a
``BackendIsNotSupposedToImplementIt``, so ONNX's backend test runner skips the case) with
halfcaf's reason; wrong inputs raise ValueError or TypeError.
"""
import os

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper
from onnx.backend.base import Backend, Device, DeviceType

from halfcaf import workspace
from halfcaf.onnx.backend_rep import HalfcafRep, Unsupported
from halfcaf.proto import caffe2_pb2

__all__ = ["HalfcafBackend", "HalfcafRep", "Unsupported", "prepare", "run_model", "run_node",
           "supports_device"]


def _device(device):
    """(DeviceType, id) of a device string ("CPU", "CUDA", "CUDA:1"), or ValueError."""
    try:
        d = Device(str(device).upper())
    except (AttributeError, ValueError):
        raise ValueError("unknown device %r (expected CPU, CUDA or CUDA:<id>)" % (device,))
    return d.type, d.device_id


def _tensor_type(array):
    """The ONNX element type of a NumPy array."""
    if array.dtype == np.object_:
        return TensorProto.STRING
    try:
        if hasattr(helper, "np_dtype_to_tensor_dtype"):  # ONNX >= 1.13
            return helper.np_dtype_to_tensor_dtype(array.dtype)
        return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype]
    except (KeyError, ValueError):
        raise TypeError("no ONNX element type for NumPy dtype %s" % array.dtype)


def _unique(names):
    out = []
    for n in names:
        if n not in out:
            out.append(n)
    return out


class HalfcafBackend(Backend):
    """ONNX's backend API over halfcaf: ``prepare`` returns a ``HalfcafRep``."""

    @classmethod
    def supports_device(cls, device):
        """CPU always; CUDA (or CUDA:<id>) when halfcaf was built with CUDA and that GPU is
        there."""
        try:
            device_type, device_id = _device(device)
        except ValueError:
            return False
        if device_type == DeviceType.CPU:
            return True
        if device_type == DeviceType.CUDA:
            return bool(workspace.has_cuda_support) and workspace.NumCudaDevices() > device_id
        return False

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        """A ``HalfcafRep`` of ``model`` (a ModelProto, its serialized bytes, or an .onnx file
        path) on ``device``. The model is checked with ONNX's checker here; halfcaf imports it
        when it first runs (it then knows the inputs' shapes)."""
        if kwargs:
            raise TypeError("prepare() got unexpected options %s" % sorted(kwargs))
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
            try:
                model = onnx.load_model_from_string(data)
            except DecodeError as e:
                raise ValueError("the bytes given are not an ONNX ModelProto: %s" % e) from e
        elif isinstance(model, onnx.ModelProto):
            data = model.SerializeToString()
        elif isinstance(model, (str, os.PathLike)):
            model = onnx.load(os.fspath(model))
            data = model.SerializeToString()
        else:
            raise TypeError("prepare() takes an ONNX ModelProto, its bytes or a file path, not %s"
                            % type(model).__name__)
        super(HalfcafBackend, cls).prepare(model, device)  # ONNX's checker
        device_type, device_id = _device(device)
        if not cls.supports_device(device):
            raise RuntimeError("halfcaf cannot run on %s here (CUDA: %s, %d GPUs)"
                               % (device, "built" if workspace.has_cuda_support else "not built",
                                  workspace.NumCudaDevices()))
        c2_type = caffe2_pb2.CUDA if device_type == DeviceType.CUDA else caffe2_pb2.CPU
        return HalfcafRep(model, data, device_type=c2_type, device_id=device_id)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Runs one ONNX node: ``inputs`` is a list (the node's non-empty inputs in order) or a
        dict by input name; ``outputs_info`` optionally gives each output's (dtype, shape),
        otherwise ONNX's shape inference types them. ``opset_version`` picks the default
        domain's opset (the newest ONNX knows by default). Returns the outputs as ``run``
        does."""
        super(HalfcafBackend, cls).run_node(node, inputs, device=device,
                                            outputs_info=outputs_info, **kwargs)
        unknown = set(kwargs) - {"opset_version"}
        if unknown:
            raise TypeError("run_node() got unexpected options %s" % sorted(unknown))
        given = [n for n in node.input if n]
        names = _unique(given)
        if isinstance(inputs, dict):
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError("inputs %s of node %s not given" % (missing, node.op_type))
            arrays = {n: np.asarray(inputs[n]) for n in names}
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) == len(given):
                pairs = zip(given, inputs)
            elif len(inputs) == len(names):
                pairs = zip(names, inputs)
            else:
                raise ValueError("node %s has %d inputs %s, %d given"
                                 % (node.op_type, len(given), given, len(inputs)))
            arrays = {}
            for n, v in pairs:
                arrays.setdefault(n, np.asarray(v))
        graph_inputs = [helper.make_tensor_value_info(n, _tensor_type(arrays[n]),
                                                      list(arrays[n].shape)) for n in names]
        output_names = [n for n in node.output if n]
        if outputs_info is not None:
            if len(outputs_info) != len(output_names):
                raise ValueError("outputs_info has %d entries, node %s has %d outputs"
                                 % (len(outputs_info), node.op_type, len(output_names)))
            graph_outputs = [
                helper.make_tensor_value_info(n, _tensor_type(np.empty(0, dtype)), list(shape))
                for n, (dtype, shape) in zip(output_names, outputs_info)]
        else:
            graph_outputs = [onnx.ValueInfoProto(name=n) for n in output_names]
        graph = helper.make_graph([node], "run_node_" + (node.op_type or "node"), graph_inputs,
                                  graph_outputs)
        opsets = [helper.make_opsetid("", kwargs.get("opset_version",
                                                     onnx.defs.onnx_opset_version()))]
        if node.domain not in ("", "ai.onnx"):
            opsets.append(helper.make_opsetid(node.domain, 1))
        model = helper.make_model(graph, opset_imports=opsets, producer_name="halfcaf.onnx")
        if outputs_info is None:
            cls._infer_output_types(model)
        return cls.prepare(model, device).run(arrays)

    @staticmethod
    def _infer_output_types(model):
        """Gives the graph's untyped outputs the types ONNX's shape inference finds (those it
        cannot type stay untyped: halfcaf's importer infers them itself)."""
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
        except Exception:  # inference failing is not the model failing
            return
        typed = {v.name: v for v in inferred.graph.output if v.type.WhichOneof("value")}
        for v in model.graph.output:
            if v.name in typed:
                v.CopyFrom(typed[v.name])


prepare = HalfcafBackend.prepare
run_model = HalfcafBackend.run_model
run_node = HalfcafBackend.run_node
supports_device = HalfcafBackend.supports_device
