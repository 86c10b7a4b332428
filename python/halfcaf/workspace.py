"""The workspace (Caffe2's caffe2.python.workspace): named blobs and nets in the C++ runtime.

One workspace is current ("default" at start); ``SwitchWorkspace`` changes it. Arrays go in and
out with ``FeedBlob`` / ``FetchBlob``: copies by default, as in Caffe2; ``copy=False`` shares the
memory instead (DLPack): ``FeedBlob(name, a, copy=False)`` makes the blob view the NumPy array or
PyTorch tensor ``a``, and ``FetchBlob(name, copy=False)`` returns a view of the blob's storage
that ``torch.from_dlpack`` and ``numpy.from_dlpack`` take without copying. A shared view sees
what later runs write into that storage.

bfloat16: NumPy has no bfloat16, so ``FetchBlob`` returns a bfloat16 blob as float32 (exactly:
every bfloat16 value is a float32); ``FeedBlob(name, float32_array, dtype="bfloat16")`` rounds to
bfloat16 (to nearest even), and a PyTorch bfloat16 tensor feeds as bfloat16 as it is.
``FetchBlob(name, copy=False)`` of a bfloat16 blob is a DLPack object: ``torch.from_dlpack``
makes it a torch.bfloat16 tensor.

Nets run with the GIL released; errors from C++ raise ``halfcaf.EnforceNotMet`` (a
RuntimeError) with the runtime's message.
"""
import numpy as np

from halfcaf import _C
from halfcaf.proto import caffe2_pb2

EnforceNotMet = _C.EnforceNotMet


def _name(x):
    return str(x)


def _bytes(proto, message_type):
    if hasattr(proto, "Proto"):
        proto = proto.Proto()
    if not isinstance(proto, message_type):
        raise TypeError("expected a %s (or an object with Proto()), got %s"
                        % (message_type.__name__, type(proto).__name__))
    return proto.SerializeToString()


def _device(device_option):
    if device_option is None:
        from halfcaf import scope
        device_option = scope.CurrentDeviceScope()
    if device_option is None:
        return 0, 0
    return device_option.device_type, device_option.device_id


# ---- workspaces ---------------------------------------------------------------------------------

def CurrentWorkspace():
    return _C.current_workspace()


def SwitchWorkspace(name, create_if_missing=False):
    _C.switch_workspace(str(name), bool(create_if_missing))


def Workspaces():
    return _C.workspaces()


def ResetWorkspace(root_folder=None):
    """Empties the current workspace (blobs and nets); ``root_folder`` roots its file paths."""
    _C.reset_workspace(root_folder or "")
    return True


def RootFolder():
    return _C.root_folder()


def GlobalInit(args):
    """Caffe2's flags, e.g. ``GlobalInit(["caffe2", "--caffe2_log_level=2"])``."""
    _C.global_init([str(a) for a in args])
    return True


# ---- blobs --------------------------------------------------------------------------------------

def Blobs():
    return _C.blobs()


def HasBlob(name):
    return _C.has_blob(_name(name))


def CreateBlob(name):
    """An empty blob (an op's output can be created before a net runs)."""
    return _C.create_blob(_name(name))


def RemoveBlob(name):
    return _C.remove_blob(_name(name))


def _as_array(arr, copy):
    if isinstance(arr, np.ndarray):
        if arr.dtype == np.object_:
            raise TypeError("FeedBlob: arrays of Python objects (strings) are not supported")
        return np.asarray(arr, order="C") if copy else arr  # (ascontiguousarray makes 0-d 1-d)
    if hasattr(arr, "__dlpack__"):  # PyTorch and other DLPack producers
        if copy and hasattr(arr, "contiguous"):
            arr = arr.contiguous()
        if hasattr(arr, "detach"):
            arr = arr.detach()
        return arr
    return np.asarray(arr, order="C")


def FeedBlob(name, arr, device_option=None, copy=True, dtype=None):
    """Puts ``arr`` (NumPy array, PyTorch tensor, Python scalar or list) into blob ``name``, on
    the device of ``device_option`` (or the current DeviceScope). ``copy=False`` shares the
    array's memory (CPU, C-contiguous). ``dtype="bfloat16"`` feeds float32 data as bfloat16."""
    if isinstance(arr, caffe2_pb2.TensorProto):
        raise TypeError("FeedBlob takes arrays, not a TensorProto")
    device_type, device_id = _device(device_option)
    array = _as_array(arr, copy)
    if dtype is not None and not isinstance(dtype, str):
        dtype = np.dtype(dtype).name
    return _C.feed_blob(_name(name), array, device_type, device_id, bool(copy), dtype or "")


def FetchBlob(name, copy=True):
    """The blob's tensor as a NumPy array (a copy), or a shared view with ``copy=False``."""
    return _C.fetch_blob(_name(name), bool(copy))


def FetchBlobs(names, copy=True):
    return [FetchBlob(n, copy) for n in names]


def BlobInfo(name):
    """(dtype name, dims, device) of a tensor blob."""
    return _C.blob_info(_name(name))


# ---- nets and operators ---------------------------------------------------------------------------

def StringifyNetName(name):
    if hasattr(name, "Name"):
        return name.Name()
    if isinstance(name, caffe2_pb2.NetDef):
        return name.name
    return str(name)


def CreateNet(net, overwrite=False, input_blobs=None):
    """Creates (validates and instantiates) a net; ``input_blobs`` are created empty first."""
    for b in input_blobs or []:
        CreateBlob(b)
    return _C.create_net(_bytes(net, caffe2_pb2.NetDef), bool(overwrite))


def RunNet(name, num_iter=1, allow_fail=False):
    """Runs a created net ``num_iter`` times (a name, a core.Net or a NetDef)."""
    try:
        return _C.run_net(StringifyNetName(name), int(num_iter))
    except EnforceNotMet:
        if allow_fail:
            return False
        raise


def Nets():
    return _C.nets()


def RunNetOnce(net):
    return _C.run_net_once(_bytes(net, caffe2_pb2.NetDef))


def RunOperatorOnce(operator):
    return _C.run_operator_once(_bytes(operator, caffe2_pb2.OperatorDef))


def RunOperatorsOnce(operators):
    for op in operators:
        RunOperatorOnce(op)
    return True


def RunPlan(plan_or_step):
    """Runs a PlanDef (a core.Plan, or an ExecutionStep wrapped in one)."""
    from halfcaf import core
    if isinstance(plan_or_step, core.ExecutionStep):
        plan_or_step = core.create_plan(plan_or_step)
    elif isinstance(plan_or_step, caffe2_pb2.ExecutionStep):
        raise TypeError("RunPlan takes a Plan (core.Plan or PlanDef), not a bare ExecutionStep proto")
    return _C.run_plan(_bytes(plan_or_step, caffe2_pb2.PlanDef))


def RegisteredOperators():
    return _C.registered_operators()


def NumCudaDevices():
    return _C.num_cuda_devices()


NumGpuDevices = NumCudaDevices
has_gpu_support = has_cuda_support = _C.has_cuda_support()


class _BlobDict(object):
    """``workspace.blobs["x"]`` fetches, ``workspace.blobs["x"] = a`` feeds (Caffe2's)."""

    def __getitem__(self, name):
        if not HasBlob(name):
            raise KeyError(name)
        return FetchBlob(name)

    def __setitem__(self, name, value):
        FeedBlob(name, value)

    def __contains__(self, name):
        return HasBlob(name)

    def __len__(self):
        return len(Blobs())

    def __iter__(self):
        return iter(Blobs())

    def keys(self):
        return Blobs()

    def items(self):
        return [(n, FetchBlob(n)) for n in Blobs()]


blobs = _BlobDict()


def Predictor(*args, **kwargs):
    """Caffe2's workspace.Predictor(init_net, predict_net): halfcaf.predictor.Predictor."""
    from halfcaf.predictor import Predictor as _Predictor
    return _Predictor(*args, **kwargs)
