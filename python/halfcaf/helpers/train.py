"""Training bookkeeping: accuracy, the iteration counter, losses."""
from halfcaf import core
from halfcaf.proto import caffe2_pb2


def accuracy(model, blob_in, blob_out, **kwargs):
    """Accuracy([prediction, label]) (top_k), run on the CPU."""
    dev = kwargs.pop("device_option", None) or core.DeviceOption(caffe2_pb2.CPU)
    return model.net.Accuracy(blob_in, blob_out, device_option=dev, **kwargs)


def iter(model, blob_out, **kwargs):
    """An int64 counter <blob_out> (0 at start, on the CPU), incremented once per run."""
    cpu = core.DeviceOption(caffe2_pb2.CPU)
    if "device_option" in kwargs:
        del kwargs["device_option"]
    model.param_init_net.ConstantFill([], blob_out, shape=[1], value=0,
                                      dtype=caffe2_pb2.TensorProto.INT64, device_option=cpu)
    return model.net.Iter(blob_out, blob_out, device_option=cpu, **kwargs)


def softmax_with_loss(model, blob_in, blob_out, **kwargs):
    """SoftmaxWithLoss([logits, label]) -> [softmax, loss]."""
    return model.net.SoftmaxWithLoss(blob_in, blob_out, **kwargs)


def sigmoid_cross_entropy_with_logits(model, blob_in, blob_out, **kwargs):
    return model.net.SigmoidCrossEntropyWithLogits(blob_in, blob_out, **kwargs)
