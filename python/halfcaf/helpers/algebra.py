"""Sums, products and weight decay."""


def sum(model, blob_in, blob_out, **kwargs):
    return model.net.Sum(blob_in, blob_out, **kwargs)


def mat_mul(model, blob_in, blob_out, **kwargs):
    return model.net.MatMul(blob_in, blob_out, **kwargs)


def add_weight_decay(model, weight_decay):
    """grad += weight_decay * param for every weight (not biases), as Caffe2's
    WeightDecayBuilder: WeightedSum([grad, ONE, param, WD], grad). Call after
    AddGradientOperators and before the optimizer."""
    if weight_decay <= 0:
        return
    wd = model.param_init_net.ConstantFill([], "wd", shape=[1], value=weight_decay)
    one = model.param_init_net.ConstantFill([], "wd_one", shape=[1], value=1.0)
    for param in model.GetParams():
        if param not in model.weights:
            continue
        grad = model.param_to_grad.get(param)
        if grad is None or isinstance(grad, tuple):
            continue
        model.net.WeightedSum([grad, one, param, wd], grad)
