"""Helpers shared by the modules (Caffe2's caffe2.python.utils)."""
import collections.abc

import numpy as np

from halfcaf.proto import caffe2_pb2


def _is_float(v):
    return isinstance(v, (float, np.floating))


def _is_int(v):
    return isinstance(v, (bool, int, np.integer, np.bool_))


def MakeArgument(key, value):
    """An Argument named ``key`` holding ``value`` (Caffe2's rules: float -> f, int or bool -> i,
    str or bytes -> s, NetDef -> n, lists of those -> floats / ints / strings / nets)."""
    argument = caffe2_pb2.Argument()
    argument.name = key
    if isinstance(value, np.ndarray):
        value = value.flatten().tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if _is_float(value):
        argument.f = float(value)
    elif _is_int(value):
        argument.i = int(value)
    elif isinstance(value, bytes):
        argument.s = value
    elif isinstance(value, str):
        argument.s = value.encode("utf-8")
    elif isinstance(value, caffe2_pb2.NetDef):
        argument.n.CopyFrom(value)
    elif hasattr(value, "Proto") and isinstance(value.Proto(), caffe2_pb2.NetDef):
        argument.n.CopyFrom(value.Proto())
    elif isinstance(value, collections.abc.Iterable):
        value = list(value)
        if all(_is_float(v) for v in value):
            argument.floats.extend(float(v) for v in value)
        elif all(_is_int(v) or _is_float(v) for v in value):
            if any(_is_float(v) for v in value):
                argument.floats.extend(float(v) for v in value)
            else:
                argument.ints.extend(int(v) for v in value)
        elif all(isinstance(v, (str, bytes)) for v in value):
            argument.strings.extend(v.encode("utf-8") if isinstance(v, str) else v for v in value)
        elif all(isinstance(v, caffe2_pb2.NetDef) for v in value):
            argument.nets.extend(value)
        elif all(hasattr(v, "Proto") for v in value):
            argument.nets.extend(v.Proto() for v in value)
        else:
            raise ValueError("argument %s: a list of mixed or unsupported types: %r" % (key, value))
    else:
        raise ValueError("argument %s: unsupported value %r of type %s"
                         % (key, value, type(value).__name__))
    return argument


def ArgumentValue(argument):
    """The Python value an Argument holds (the inverse of MakeArgument)."""
    if argument.HasField("f"):
        return argument.f
    if argument.HasField("i"):
        return argument.i
    if argument.HasField("s"):
        return argument.s
    if argument.HasField("n"):
        return argument.n
    if argument.floats:
        return list(argument.floats)
    if argument.ints:
        return list(argument.ints)
    if argument.strings:
        return list(argument.strings)
    if argument.nets:
        return list(argument.nets)
    return None


def GetArgument(op, name, default=None):
    for a in op.arg:
        if a.name == name:
            return ArgumentValue(a)
    return default
