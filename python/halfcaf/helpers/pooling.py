"""Pooling layers."""


def _pool(op_type, model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
    return model.net.__getattr__(op_type)(blob_in, blob_out, order=order, **kwargs)


def max_pool(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    """MaxPool (kernel, stride, pad, global_pooling, ...)."""
    return _pool("MaxPool", model, blob_in, blob_out, use_cudnn, order, **kwargs)


def average_pool(model, blob_in, blob_out, use_cudnn=False, order="NCHW", **kwargs):
    """AveragePool (kernel, stride, pad, global_pooling, ...)."""
    return _pool("AveragePool", model, blob_in, blob_out, use_cudnn, order, **kwargs)
