"""Parameter initializers (Caffe2's caffe2.python.modeling.initializers): an op of the init net
that fills a parameter (XavierFill, ConstantFill, GaussianFill, MSRAFill, UniformFill, ...), or
none when the parameter comes from outside (ExternalInitializer)."""
from halfcaf.parameter_info import ParameterInfo


class Initializer(object):
    """Fills the parameter with ``operator_name(**kwargs)`` in the init net."""

    def __init__(self, operator_name=None, **kwargs):
        self.operator_name = operator_name
        self.operator_kwargs = kwargs

    def update(self, operator_name, kwargs):
        if self.operator_name is not None:
            raise Exception("an initializer's operator is set once")
        self.operator_name = operator_name
        self.operator_kwargs = kwargs

    def create_param(self, param_name, init_net, shape):
        param = init_net.__getattr__(self.operator_name)(
            [], param_name, shape=list(shape), **self.operator_kwargs)
        return ParameterInfo(param_id=None, param=param, shape=shape)


class ExternalInitializer(object):
    """No init op: the parameter is fed or loaded from elsewhere (deploy nets, checkpoints)."""

    def create_param(self, param_name, init_net, shape):
        from halfcaf import core
        param = core.BlobReference(str(param_name), init_net)
        return ParameterInfo(param_id=None, param=param, shape=shape)


def update_initializer(initializer_class, operator_name_and_kwargs, default_operator_name_and_kwargs):
    """Caffe2's rule: an explicit (name, kwargs) pair wins over the class, which wins over the
    default."""
    if operator_name_and_kwargs is None:
        operator_name_and_kwargs = default_operator_name_and_kwargs
    if initializer_class is not None:
        init = initializer_class(operator_name_and_kwargs[0], **operator_name_and_kwargs[1])
    else:
        init = Initializer(operator_name_and_kwargs[0], **operator_name_and_kwargs[1])
    return init
