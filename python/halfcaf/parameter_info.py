"""Parameters and their roles (Caffe2's caffe2.python.modeling.parameter_info)."""


class ParameterTags(object):
    BIAS = "BIAS"
    WEIGHT = "WEIGHT"
    COMPUTED_PARAM = "COMPUTED_PARAM"


class ParameterInfo(object):
    """A parameter blob, its gradient (once gradients exist), its shape and tags."""

    def __init__(self, param_id, param, key=None, shape=None, length=None, grad=None,
                 blob_copy=None):
        assert param is not None
        self.param_id = param_id
        self.name = str(param)
        self.blob = param
        self.key = key
        self.shape = shape
        self.size = None if shape is None else _product(shape)
        self.length = max(1, length if length is not None else 1)
        self.grad = grad
        self._cloned_init_net = None
        self.blob_copy = blob_copy  # {dtype: the low-precision copy's blob}, mixed precision

    def grad_type(self):
        assert self.grad is not None, "no gradient for %s" % self.name
        return "sparse" if isinstance(self.grad, tuple) else "dense"

    def __str__(self):
        return self.name


def _product(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n
