"""brew (Caffe2's caffe2.python.brew): layer helpers that add a layer's parameters to a
ModelHelper and its op to the model's net, e.g. ``brew.fc(model, x, "fc1", dim_in=784,
dim_out=10)``. Defaults come from the model's ``arg_scope`` (for the helper's named arguments,
e.g. ``order``) and from ``brew.arg_scope([brew.conv], ...)`` blocks."""
import contextlib
import functools
import inspect
import threading

from halfcaf.helpers import algebra as _algebra
from halfcaf.helpers import array_helpers as _array_helpers
from halfcaf.helpers import conv as _conv
from halfcaf.helpers import dropout as _dropout
from halfcaf.helpers import fc as _fc
from halfcaf.helpers import nonlinearity as _nonlinearity
from halfcaf.helpers import normalization as _normalization
from halfcaf.helpers import pooling as _pooling
from halfcaf.helpers import train as _train

_threadlocal = threading.local()


def _current_scope():
    if not hasattr(_threadlocal, "scope"):
        _threadlocal.scope = {}
    return _threadlocal.scope


@contextlib.contextmanager
def arg_scope(helpers, **kwargs):
    """Default keyword arguments for ``helpers`` inside the block."""
    if not isinstance(helpers, (list, tuple)):
        helpers = [helpers]
    old = dict(_current_scope())
    new = dict(old)
    for h in helpers:
        name = getattr(h, "__name__", str(h))
        merged = dict(new.get(name, {}))
        merged.update(kwargs)
        new[name] = merged
    _threadlocal.scope = new
    try:
        yield
    finally:
        _threadlocal.scope = old


class HelperWrapper(object):
    _registry = {}

    def Register(self, helper):
        name = helper.__name__
        if name in self._registry:
            raise AttributeError("helper '%s' is registered already" % name)
        self._registry[name] = helper

    def has_helper(self, helper_or_name):
        name = helper_or_name if isinstance(helper_or_name, str) else helper_or_name.__name__
        return name in self._registry

    def __getattr__(self, name):
        if name not in self._registry:
            raise AttributeError("brew has no helper '%s' (brew.helpers() lists them)" % name)
        helper = self._registry[name]
        params = inspect.signature(helper).parameters

        @functools.wraps(helper)
        def scope_wrapper(*args, **kwargs):
            new_kwargs = {}
            model = args[0] if args else kwargs.get("model")
            model_scope = getattr(model, "arg_scope", None) or {}
            for key, value in model_scope.items():
                if key in params and key not in ("model", "blob_in", "blob_out"):
                    new_kwargs[key] = value
            new_kwargs.update(_current_scope().get(name, {}))
            new_kwargs.update(kwargs)
            return helper(*args, **new_kwargs)

        return scope_wrapper

    def helpers(self):
        return sorted(self._registry)

    @property
    def arg_scope(self):
        return arg_scope


_HELPERS = [
    _fc.fc, _fc.fc_transposed,
    _conv.conv, _conv.conv_nd, _conv.conv_transpose, _conv.group_conv,
    _pooling.max_pool, _pooling.average_pool,
    _nonlinearity.relu, _nonlinearity.leaky_relu, _nonlinearity.prelu, _nonlinearity.sigmoid,
    _nonlinearity.tanh, _nonlinearity.elu, _nonlinearity.softmax,
    _normalization.spatial_bn, _normalization.lrn,
    _dropout.dropout,
    _array_helpers.concat, _array_helpers.depth_concat, _array_helpers.transpose,
    _array_helpers.flatten, _array_helpers.reshape,
    _algebra.sum, _algebra.mat_mul, _algebra.add_weight_decay,
    _train.accuracy, _train.iter, _train.softmax_with_loss, _train.sigmoid_cross_entropy_with_logits,
]

_wrapper = HelperWrapper()
for _h in _HELPERS:
    if not _wrapper.has_helper(_h):
        _wrapper.Register(_h)


def Register(helper):
    _wrapper.Register(helper)
    globals()[helper.__name__] = getattr(_wrapper, helper.__name__)


for _name in _wrapper.helpers():  # brew.fc, brew.conv, ... with the scopes applied
    globals()[_name] = getattr(_wrapper, _name)


def helpers():
    return _wrapper.helpers()


def __getattr__(name):
    return getattr(_wrapper, name)
