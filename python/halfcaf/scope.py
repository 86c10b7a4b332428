"""Name and device scopes (Caffe2's caffe2.python.scope): blob names created inside
``NameScope("a")`` start with ``a/``, ops created inside ``DeviceScope(option)`` run there."""
import contextlib
import threading

_NAMESCOPE_SEPARATOR = "/"
_threadlocal = threading.local()


def CurrentNameScope():
    return getattr(_threadlocal, "namescope", "")


def CurrentDeviceScope():
    return getattr(_threadlocal, "devicescope", None)


@contextlib.contextmanager
def NameScope(prefix, reset=False):
    if prefix is None:
        prefix = ""
    prefix = str(prefix)
    assert isinstance(prefix, str), "NameScope takes a string"
    old = CurrentNameScope()
    if prefix and not prefix.endswith(_NAMESCOPE_SEPARATOR):
        prefix += _NAMESCOPE_SEPARATOR
    _threadlocal.namescope = prefix if reset else old + prefix
    try:
        yield
    finally:
        _threadlocal.namescope = old


@contextlib.contextmanager
def DeviceScope(scope, node_name=None):
    from halfcaf.proto import caffe2_pb2
    new = caffe2_pb2.DeviceOption()
    if scope is not None:
        new.CopyFrom(scope)
    if node_name:
        new.node_name = node_name
    old = CurrentDeviceScope()
    _threadlocal.devicescope = new
    try:
        yield
    finally:
        _threadlocal.devicescope = old


@contextlib.contextmanager
def EmptyDeviceScope():
    old = CurrentDeviceScope()
    _threadlocal.devicescope = None
    try:
        yield
    finally:
        _threadlocal.devicescope = old
