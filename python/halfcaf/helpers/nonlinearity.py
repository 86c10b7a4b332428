"""Activations."""
from halfcaf.parameter_info import ParameterTags


def relu(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    return model.net.Relu(blob_in, blob_out, **kwargs)


def leaky_relu(model, blob_in, blob_out, alpha=0.01, **kwargs):
    return model.net.LeakyRelu(blob_in, blob_out, alpha=alpha, **kwargs)


def prelu(model, blob_in, blob_out, num_channels=1, slope_init=None, **kwargs):
    """PRelu with a learned slope <blob_out>_slope per channel (0.25 at start)."""
    slope_init = slope_init or ("ConstantFill", {"value": 0.25})
    slope = model.create_param(param_name=str(blob_out) + "_slope", shape=[num_channels],
                               initializer=slope_init, tags=ParameterTags.WEIGHT)
    return model.net.PRelu([blob_in, slope], [blob_out], **kwargs)


def sigmoid(model, blob_in, blob_out, **kwargs):
    return model.net.Sigmoid(blob_in, blob_out, **kwargs)


def tanh(model, blob_in, blob_out, **kwargs):
    return model.net.Tanh(blob_in, blob_out, **kwargs)


def elu(model, blob_in, blob_out, **kwargs):
    return model.net.Elu(blob_in, blob_out, **kwargs)


def softmax(model, blob_in, blob_out=None, use_cudnn=False, **kwargs):
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
    if blob_out is not None:
        return model.net.Softmax(blob_in, blob_out, **kwargs)
    return model.net.Softmax(blob_in, **kwargs)
