"""Running a deployed model (Caffe2's workspace.Predictor and caffe2.python.predictor).

A Predictor holds an init net (the parameters) and a predict net in a workspace of its own::

    p = predictor.Predictor("init_net.pb", "predict_net.pb")
    softmax, = p.run([images])             # or p.run({"data": images}), or p([images])

The init net runs once, when the Predictor is made; its blobs are the parameters. The inputs are
the predict net's external inputs that the init net did not produce, in the order of
``external_input``; the outputs are the predict net's ``external_output`` blobs, as NumPy arrays
(copies). Every call switches to the Predictor's workspace and back to the caller's current one
(also when it fails), so the caller's blobs are never touched. Switching workspaces is global to
the process: Predictors are not for concurrent use from several Python threads.

``optimize=True`` applies halfcaf's inference optimizer (``_C.optimize_for_inference``: batch-norm
folding, Conv + Relu / Add fusion, NHWC regions with oneDNN) to the predict net after the init
net ran, keeping the output blobs; ``optimize_summary`` says what it did.

Nets are given as NetDefs, core.Nets, serialized bytes, or paths of files (binary ``.pb`` or text
``.pbtxt``). ``close()`` (or leaving a ``with`` block, or the Predictor being garbage collected)
empties its workspace, freeing the parameters.
"""
import itertools
import os
import warnings

import numpy as np
from google.protobuf import message as _message
from google.protobuf import text_format

from halfcaf import _C, workspace
from halfcaf.proto import caffe2_pb2

_TEXT_EXTENSIONS = ('.pbtxt', '.prototxt', '.pbtext', '.txt')
_workspace_ids = itertools.count()


def _parse_binary(content, what, source):
    content = bytes(content)
    net = caffe2_pb2.NetDef()
    try:
        # Some protobuf builds stop at a stray end-group tag with a warning, not an error, and
        # report how much they read: both mean the data is no NetDef.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            read = net.ParseFromString(content)
        if caught or (read is not None and read != len(content)):
            raise _message.DecodeError("trailing data that is not part of a NetDef")
    except (_message.DecodeError, RuntimeError, ValueError) as e:
        raise ValueError("%s: %s is not a serialized NetDef (%s)" % (what, source, e))
    return net


def _parse_text(text, what, source):
    net = caffe2_pb2.NetDef()
    try:
        text_format.Merge(text, net)
    except text_format.ParseError as e:
        raise ValueError("%s: %s is not a NetDef in protobuf text format (%s)" % (what, source, e))
    return net


def _read_net_file(path, what):
    if not os.path.exists(path):
        raise FileNotFoundError("%s: file %s does not exist" % (what, path))
    if os.path.isdir(path):
        raise IsADirectoryError("%s: %s is a folder, not a NetDef file" % (what, path))
    with open(path, 'rb') as f:
        content = f.read()
    source = "file " + path
    if not content.strip():
        raise ValueError("%s: %s is empty" % (what, source))
    if path.lower().endswith(_TEXT_EXTENSIONS):
        return _parse_text(content.decode('utf-8', errors='replace'), what, source)
    if path.lower().endswith('.pb'):
        try:
            return _parse_binary(content, what, source)
        except ValueError:
            pass  # a text net named .pb
    # Text first: protobuf text never parses as binary, but binary data rarely decodes as text.
    try:
        return _parse_text(content.decode('utf-8'), what, source)
    except (UnicodeDecodeError, ValueError):
        pass
    try:
        return _parse_binary(content, what, source)
    except ValueError:
        raise ValueError("%s: %s holds a NetDef neither in binary nor in text format"
                         % (what, source))


def LoadNet(net, what='net'):
    """A copy of ``net`` as a NetDef: ``net`` is a NetDef, a core.Net (anything with Proto()),
    serialized bytes, or the path of a binary (.pb) or text (.pbtxt) file."""
    if isinstance(net, caffe2_pb2.NetDef):
        out = caffe2_pb2.NetDef()
        out.CopyFrom(net)
        return out
    if hasattr(net, 'Proto'):
        proto = net.Proto()
        if not isinstance(proto, caffe2_pb2.NetDef):
            raise TypeError("%s: Proto() gave a %s, not a NetDef" % (what, type(proto).__name__))
        return LoadNet(proto, what)
    if isinstance(net, (bytes, bytearray, memoryview)):
        return _parse_binary(net, what, "the bytes given")
    if isinstance(net, (str, os.PathLike)):
        return _read_net_file(os.fspath(net), what)
    raise TypeError("%s: expected a NetDef, a core.Net, serialized bytes or a file path, not %s"
                    % (what, type(net).__name__))


def _set_device(net, device_option):
    """The net and its ops without a device of their own run on ``device_option``."""
    net.device_option.CopyFrom(device_option)
    for op in net.op:
        if not op.HasField('device_option'):
            op.device_option.CopyFrom(device_option)


class Predictor(object):
    """Runs ``predict_net`` on inputs, with the parameters ``init_net`` made, in a workspace of
    its own (see the module's description).

    ``device_option`` (a caffe2_pb2.DeviceOption) places both nets, and their ops that name no
    device, on that device, and the inputs are fed there; without it, inputs go to the predict
    net's device_option, or the CPU. ``optimize`` applies the inference optimizer.
    ``workspace_name`` names the private workspace (by default a new unique "predictor_<n>"); it
    must not exist yet.
    """

    def __init__(self, init_net, predict_net, device_option=None, optimize=False,
                 workspace_name=None):
        self._closed = True  # until the workspace exists
        init = LoadNet(init_net, 'init_net')
        predict = LoadNet(predict_net, 'predict_net')
        if not predict.external_output:
            raise ValueError(
                "predict_net %r lists no external_output: a Predictor returns the external "
                "outputs, so add the blobs to fetch (e.g. predict_net.external_output.append("
                "'softmax'))" % predict.name)
        if not predict.name:
            predict.name = 'predict'
        if device_option is not None:
            _set_device(init, device_option)
            _set_device(predict, device_option)
        # Inputs go where the predict net runs (never to the caller's current DeviceScope).
        if device_option is None:
            device_option = (predict.device_option if predict.HasField('device_option')
                             else caffe2_pb2.DeviceOption())  # the CPU
        self._device_option = device_option
        self.optimize_summary = None

        existing = set(workspace.Workspaces())
        if workspace_name is None:
            workspace_name = 'predictor_%d' % next(_workspace_ids)
            while workspace_name in existing:
                workspace_name = 'predictor_%d' % next(_workspace_ids)
        elif workspace_name in existing:
            raise ValueError("workspace %r exists already; a Predictor needs a new one"
                             % workspace_name)
        self._workspace_name = str(workspace_name)

        caller = workspace.CurrentWorkspace()
        workspace.SwitchWorkspace(self._workspace_name, True)
        self._closed = False
        try:
            workspace.RunNetOnce(init)
            parameters = set(workspace.Blobs())
            self._input_names = [b for b in predict.external_input if b not in parameters]
            self._output_names = list(predict.external_output)
            if optimize:
                optimized, self.optimize_summary = _C.optimize_for_inference(
                    predict.SerializeToString(), keep=set(self._output_names))
                predict = caffe2_pb2.NetDef()
                predict.ParseFromString(optimized)
            workspace.CreateNet(predict, overwrite=True, input_blobs=self._input_names)
            self._net_name = predict.name
            self._predict_net = predict
        except BaseException:
            self._reset_workspace()
            self._closed = True
            raise
        finally:
            workspace.SwitchWorkspace(caller)

    # -- what it runs ----------------------------------------------------------------------------
    @property
    def input_names(self):
        """The inputs, in the order run() takes them as a list."""
        return list(self._input_names)

    @property
    def output_names(self):
        """The outputs, in the order run() returns them."""
        return list(self._output_names)

    @property
    def workspace_name(self):
        return self._workspace_name

    @property
    def predict_net(self):
        """The predict net as created (after the optimizer, with optimize=True)."""
        out = caffe2_pb2.NetDef()
        out.CopyFrom(self._predict_net)
        return out

    # -- running -------------------------------------------------------------------------------
    def _named_inputs(self, inputs):
        if isinstance(inputs, dict):
            feeds = {}
            for name, value in inputs.items():
                name = str(name)
                if name not in self._input_names:
                    raise KeyError("Predictor.run: %r is not an input of the predict net; its "
                                   "inputs are %s" % (name, self._input_names))
                feeds[name] = value
            missing = [n for n in self._input_names if n not in feeds]
            if missing:
                raise KeyError("Predictor.run: no value for input(s) %s (inputs are %s)"
                               % (missing, self._input_names))
            return [(n, feeds[n]) for n in self._input_names]
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != len(self._input_names):
                raise ValueError("Predictor.run: the predict net takes %d input(s) %s, got %d"
                                 % (len(self._input_names), self._input_names, len(inputs)))
            return list(zip(self._input_names, inputs))
        raise TypeError("Predictor.run takes a list of arrays (in the order %s) or a dict "
                        "name -> array, not %s" % (self._input_names, type(inputs).__name__))

    def run(self, inputs):
        """Feeds ``inputs`` (a list in the order of input_names, or a dict name -> array), runs
        the predict net and returns its outputs as a list of NumPy arrays."""
        if self._closed:
            raise RuntimeError("Predictor.run: the Predictor is closed")
        feeds = self._named_inputs(inputs)
        caller = workspace.CurrentWorkspace()
        try:
            workspace.SwitchWorkspace(self._workspace_name)
        except workspace.EnforceNotMet:
            raise RuntimeError("Predictor.run: its workspace %r is gone (were the workspaces "
                               "cleared?)" % self._workspace_name)
        try:
            for name, value in feeds:
                workspace.FeedBlob(name, value, device_option=self._device_option)
            workspace.RunNet(self._net_name)
            return [np.asarray(workspace.FetchBlob(name)) for name in self._output_names]
        finally:
            workspace.SwitchWorkspace(caller)

    __call__ = run

    # -- releasing -----------------------------------------------------------------------------
    def _reset_workspace(self):
        # The runtime has no call that deletes a workspace: an empty one stays behind.
        workspace.ResetWorkspace()

    def close(self):
        """Empties the Predictor's workspace (its parameters and net); run() fails afterwards."""
        if self._closed:
            return
        self._closed = True
        caller = workspace.CurrentWorkspace()
        if caller == self._workspace_name:
            caller = 'default'
        try:
            workspace.SwitchWorkspace(self._workspace_name)
        except workspace.EnforceNotMet:
            return  # already gone
        try:
            self._reset_workspace()
        finally:
            workspace.SwitchWorkspace(caller, True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # at interpreter exit the runtime may be gone

    def __repr__(self):
        return "Predictor(inputs=%s, outputs=%s, workspace=%r%s)" % (
            self._input_names if hasattr(self, '_input_names') else [],
            self._output_names if hasattr(self, '_output_names') else [],
            self._workspace_name if hasattr(self, '_workspace_name') else None,
            ", closed" if self._closed else "")
