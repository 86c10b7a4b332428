"""Mixed precision for a ModelHelper, through the C++ transform (models/mixed_precision.h):
Conv, FC and ConvTranspose compute in float16 (or bfloat16) on 16-bit copies of the FP32 master
parameters, softmax and the losses stay in float32 behind casts. Call ``convert`` on the forward
model before ``AddGradientOperators``; then ``optimizer.build_multi_precision_sgd`` updates each
FP32 master from its copy's 16-bit gradient and refreshes the copy (Caffe2's recipe)."""
from halfcaf import _C, core
from halfcaf.proto import caffe2_pb2

_TO_LOW = {"float16": "FloatToHalf", "bfloat16": "FloatToBFloat16"}
_TO_FLOAT = {"float16": "HalfToFloat", "bfloat16": "BFloat16ToFloat"}


def to_float_op(low_type):
    return _TO_FLOAT[low_type]


def to_low_op(low_type):
    return _TO_LOW[low_type]


def convert(model, low_type="float16", low_precision_inputs=()):
    """Rewrites ``model.net`` in place; returns the masters that got a 16-bit copy. Each such
    parameter's ParameterInfo then names the copy as its blob (the one that gets a gradient) and
    the master in ``blob_copy[FLOAT]``."""
    if low_type not in _TO_LOW:
        raise ValueError("low_type is float16 or bfloat16, not %r" % (low_type,))
    if model.gradient_ops_added:
        raise RuntimeError("convert the forward model before AddGradientOperators")
    masters = [str(p) for p in model.params]
    net_bytes, copied = _C.to_mixed_precision(
        model.net.Proto().SerializeToString(), set(str(b) for b in low_precision_inputs),
        set(masters), low_type)
    proto = caffe2_pb2.NetDef()
    proto.ParseFromString(net_bytes)
    name = model.net.Name()
    model.net.Proto().CopyFrom(proto)
    model.net.Proto().name = name
    model.net._op_outputs = set(o for op in proto.op for o in op.output)
    for master in copied:
        copy = _C.low_precision_copy_name(master, low_type)
        model.param_init_net.__getattr__(_TO_LOW[low_type])(master, copy)
        info = model._parameters_info.pop(master)
        ref = core.BlobReference(copy, model.net)
        info.blob_copy = {caffe2_pb2.TensorProto.FLOAT: core.BlobReference(master, model.net)}
        info.low_type = low_type
        info.blob = ref
        info.name = copy
        model._parameters_info[copy] = info
        for group in (model.params, model.weights, model.biases):
            for i, p in enumerate(group):
                if str(p) == master:
                    group[i] = ref
    return list(copied)
