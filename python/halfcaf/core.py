"""Nets, operators and plans (Caffe2's caffe2.python.core).

Ops are built by calling their type on a Net (``net.FC([x, w, b], "y")``) or on a BlobReference
(``x.Relu([], "y")``); outputs left out are named automatically. ``Net.AddGradientOperators``
appends the backward pass with the C++ gradient registry (the same gradient ops Caffe2 writes).
"""
from halfcaf import _C, scope
from halfcaf.proto import caffe2_pb2
from halfcaf.utils import MakeArgument

DataType = caffe2_pb2.TensorProto
# As in Caffe2, the scopes are reachable from core too.
NameScope = scope.NameScope
DeviceScope = scope.DeviceScope
_REGISTERED_OPERATORS = None


def _registered_operators():
    global _REGISTERED_OPERATORS
    if _REGISTERED_OPERATORS is None:
        _REGISTERED_OPERATORS = set(_C.registered_operators())
    return _REGISTERED_OPERATORS


def IsOperator(op_type):
    return op_type in _registered_operators()


def RegisteredOperators():
    return sorted(_registered_operators())


def DeviceOption(device_type, device_id=0, random_seed=None, node_name=None, numa_node_id=None):
    option = caffe2_pb2.DeviceOption()
    option.device_type = device_type
    option.device_id = device_id
    if node_name is not None:
        option.node_name = node_name
    if random_seed is not None:
        option.random_seed = random_seed
    if numa_node_id is not None:
        option.numa_node_id = numa_node_id
    return option


def ScopedName(name):
    return scope.CurrentNameScope() + name


class BlobReference(object):
    """A blob's name, and the net that made it (ops can be called on it)."""

    def __init__(self, name, net=None):
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        self._name = str(name)
        self._from_net = net

    def __hash__(self):
        return hash(self._name)

    def __eq__(self, other):
        if isinstance(other, str):
            return self._name == other
        if isinstance(other, BlobReference):
            return self._name == other._name
        return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __str__(self):
        return self._name

    def __repr__(self):
        return "BlobReference(\"{}\")".format(self._name)

    def __add__(self, other):
        if not isinstance(other, str):
            raise RuntimeError("a BlobReference can only be extended with a string")
        return BlobReference(self._name + other, self._from_net)

    def __radd__(self, other):
        if not isinstance(other, str):
            raise RuntimeError("a BlobReference can only be extended with a string")
        return BlobReference(other + self._name, self._from_net)

    def Net(self):
        return self._from_net

    def GetNameScope(self):
        return self._name[:self._name.rfind(scope._NAMESCOPE_SEPARATOR) + 1]

    def GetUnscopedName(self):
        return self._name[self._name.rfind(scope._NAMESCOPE_SEPARATOR) + 1:]

    def _CreateAndAddToNet(self, op_type, inputs=None, *args, **kwargs):
        inputs = [] if inputs is None else inputs
        if isinstance(inputs, (BlobReference, str)):
            inputs = [inputs]
        inputs = [self] + list(inputs)
        return self._from_net.__getattr__(op_type)(inputs, *args, **kwargs)

    def __getattr__(self, op_type):
        if op_type.startswith("__"):
            raise AttributeError(op_type)
        if self._from_net is None:
            raise AttributeError(
                "blob %s belongs to no net, so it cannot create op %s" % (self._name, op_type))
        if not IsOperator(op_type):
            raise AttributeError("'%s' is not a halfcaf operator type" % op_type)
        return lambda *args, **kwargs: self._CreateAndAddToNet(op_type, *args, **kwargs)

    def __dir__(self):
        return sorted(set(dir(type(self)) + list(self.__dict__) + RegisteredOperators()))


def ScopedBlobReference(name, *args, **kwargs):
    return BlobReference(scope.CurrentNameScope() + name, *args, **kwargs)


def _RectifyInputOutput(blobs, net=None):
    """Strings become scoped BlobReferences; BlobReferences stay; lists of either."""
    if isinstance(blobs, str):
        return [ScopedBlobReference(blobs, net=net)]
    if isinstance(blobs, BlobReference):
        return [blobs]
    if isinstance(blobs, (list, tuple)):
        out = []
        for b in blobs:
            if isinstance(b, str):
                out.append(ScopedBlobReference(b, net=net))
            elif isinstance(b, BlobReference):
                out.append(b)
            else:
                raise TypeError("a blob is a string or a BlobReference, not %r" % (b,))
        return out
    raise TypeError("blobs are a string, a BlobReference or a list of them, not %r" % (blobs,))


def CreateOperator(operator_type, inputs, outputs, name="", control_input=None,
                   device_option=None, arg=None, engine=None, **kwargs):
    """An OperatorDef; keyword arguments become its Arguments (utils.MakeArgument)."""
    operator = caffe2_pb2.OperatorDef()
    operator.type = operator_type
    operator.name = name
    inputs = _RectifyInputOutput(inputs)
    outputs = _RectifyInputOutput(outputs)
    operator.input.extend(str(i) for i in inputs)
    operator.output.extend(str(o) for o in outputs)
    if control_input:
        operator.control_input.extend(str(i) for i in _RectifyInputOutput(control_input))
    if device_option is not None:
        operator.device_option.CopyFrom(device_option)
    elif scope.CurrentDeviceScope() is not None:
        operator.device_option.CopyFrom(scope.CurrentDeviceScope())
    if engine is not None:
        operator.engine = engine
    if "debug_info" in kwargs:
        operator.debug_info = kwargs.pop("debug_info")
    if "is_gradient_op" in kwargs:
        operator.is_gradient_op = bool(kwargs.pop("is_gradient_op"))
    for key, value in sorted(kwargs.items()):
        if value is not None:
            operator.arg.add().CopyFrom(MakeArgument(key, value))
    if arg is not None:
        operator.arg.extend(arg)
    return operator


class Net(object):
    """A NetDef being built (Caffe2's core.Net)."""
    _net_names_used = set()

    @staticmethod
    def current_prefix():
        return scope.CurrentNameScope().rstrip(scope._NAMESCOPE_SEPARATOR) or ""

    @staticmethod
    def _get_next_net_name(basename):
        name = basename
        next_idx = 1
        while name in Net._net_names_used:
            name = basename + "_" + str(next_idx)
            next_idx += 1
        Net._net_names_used.add(name)
        return name

    def __init__(self, name_or_proto, inplace=False):
        self._input_record = None
        self._output_record = None
        self._next_name_index = 0
        self._next_blob_name_ids = {}
        if isinstance(name_or_proto, caffe2_pb2.NetDef):
            proto = name_or_proto
            self._net = caffe2_pb2.NetDef()
            self._net.CopyFrom(proto)
            if not self._net.name:
                self._net.name = Net._get_next_net_name("net")
            Net._net_names_used.add(self._net.name)
            self._op_outputs = set(o for op in self._net.op for o in op.output)
            self._external_input_map = set(self._net.external_input)
        else:
            name = str(name_or_proto)
            self._net = caffe2_pb2.NetDef()
            self._net.name = Net._get_next_net_name(name)
            self._op_outputs = set()
            self._external_input_map = set()

    # -- the proto ------------------------------------------------------------------------------
    def Proto(self):
        return self._net

    def Name(self):
        return self._net.name

    def __str__(self):
        return self.Name()

    def __repr__(self):
        return "Net(\"{}\")".format(self.Name())

    def Clone(self, name, blob_remap=None, op_id_mask=None, remap_funcs=None, keep_schema=True,
              update_external_list=False):
        """A copy named ``name``; ``blob_remap`` renames blobs, ``op_id_mask`` keeps only the ops
        at those positions."""
        blob_remap = {str(k): str(v) for k, v in (blob_remap or {}).items()}
        proto = caffe2_pb2.NetDef()
        proto.CopyFrom(self._net)
        del proto.op[:]
        ops = self._net.op if op_id_mask is None else [self._net.op[i] for i in op_id_mask]
        for op in ops:
            new = proto.op.add()
            new.CopyFrom(op)
            new.input[:] = [blob_remap.get(b, b) for b in op.input]
            new.output[:] = [blob_remap.get(b, b) for b in op.output]
        proto.external_input[:] = [blob_remap.get(b, b) for b in self._net.external_input]
        proto.external_output[:] = [blob_remap.get(b, b) for b in self._net.external_output]
        proto.name = name
        new_net = Net(proto)
        if update_external_list:
            produced = set(o for op in new_net._net.op for o in op.output)
            read = []
            for op in new_net._net.op:
                read += [b for b in op.input if b not in produced and b not in read]
            new_net._net.external_input[:] = read
        return new_net

    # -- blobs ----------------------------------------------------------------------------------
    def BlobIsDefined(self, blob):
        name = str(blob)
        return name in self._op_outputs or name in self._external_input_map

    def UsesBlob(self, blob):
        name = str(blob)
        return any(name in op.input or name in op.output for op in self._net.op) or \
            name in self._external_input_map

    def GetExternalInputs(self):
        return [BlobReference(b, self) for b in self._net.external_input]

    def GetExternalOutputs(self):
        return [BlobReference(b, self) for b in self._net.external_output]

    @property
    def external_inputs(self):
        return self.GetExternalInputs()

    @property
    def external_outputs(self):
        return self.GetExternalOutputs()

    def AddExternalInput(self, *inputs):
        assert len(inputs) > 0
        refs = _RectifyInputOutput(list(inputs), net=self)
        for ref in refs:
            name = str(ref)
            if name in self._external_input_map:
                raise ValueError("%s is already an external input of net %s" % (name, self.Name()))
            self._external_input_map.add(name)
            self._net.external_input.append(name)
        return refs[0] if len(refs) == 1 else refs

    AddExternalInputs = AddExternalInput

    def AddExternalOutput(self, *outputs):
        for output in outputs:
            name = str(output)
            if not self.BlobIsDefined(name):
                raise ValueError("%s is not produced by net %s" % (name, self.Name()))
            self._net.external_output.append(name)
        return outputs[0] if len(outputs) == 1 else outputs

    AddExternalOutputs = AddExternalOutput

    def NextName(self, prefix=None, output_id=None):
        if prefix:
            base = self._net.name + "/" + prefix
            name = base if output_id is None else base + ":" + str(output_id)
            key = name
            index = self._next_blob_name_ids.get(key, 2)
            while self.BlobIsDefined(str(ScopedBlobReference(name))):
                name = base + "_" + str(index)
                if output_id is not None:
                    name += ":" + str(output_id)
                index += 1
                self._next_blob_name_ids[key] = index
        else:
            name = self._net.name + "_blob_" + str(self._next_name_index)
            self._next_name_index += 1
        return str(name)

    def NextBlob(self, prefix=None):
        return BlobReference(self.NextName(prefix), self)

    def NextScopedBlob(self, prefix="unnamed"):
        return ScopedBlobReference(self.NextName(prefix), net=self)

    # -- ops ------------------------------------------------------------------------------------
    def _ExtendOps(self, ops):
        for op in ops:
            self._net.op.add().CopyFrom(op)
            self._op_outputs.update(op.output)

    def AddOp(self, op):
        """Appends an OperatorDef as it is."""
        self._ExtendOps([op])

    def _CreateAndAddToSelf(self, op_type, inputs, outputs=None, **kwargs):
        inputs = _RectifyInputOutput(inputs)
        for i in inputs:
            if not self.BlobIsDefined(i):
                self.AddExternalInput(i)
        if outputs is None:
            outputs = self.NextName(prefix=op_type)
        elif isinstance(outputs, int):
            outputs = [self.NextName(prefix=op_type, output_id=i) for i in range(outputs)]
        outputs = _RectifyInputOutput(outputs, net=self)
        op = CreateOperator(op_type, inputs, outputs, **kwargs)
        self._ExtendOps([op])
        if len(op.output) == 0:
            return None
        if len(op.output) == 1:
            return BlobReference(op.output[0], self)
        return tuple(BlobReference(o, self) for o in op.output)

    def __getattr__(self, op_type):
        if op_type.startswith("__") or op_type.startswith("_"):
            raise AttributeError(op_type)
        if not IsOperator(op_type):
            raise AttributeError(
                "'%s' is not a halfcaf operator type (workspace.RegisteredOperators() lists them)"
                % op_type)
        return lambda *args, **kwargs: self._CreateAndAddToSelf(op_type, *args, **kwargs)

    def __dir__(self):
        return sorted(set(dir(type(self)) + list(self.__dict__) + RegisteredOperators()))

    # -- gradients and devices ------------------------------------------------------------------
    def AddGradientOperators(self, ys, skip=0):
        """Appends the gradient ops of losses ``ys`` (each seeded with 1, or by a dict
        {loss: seed blob}); returns {blob: BlobReference of its gradient} (sparse gradients as
        (indices, values) pairs)."""
        if skip:
            raise ValueError("AddGradientOperators(skip=...) is not supported")
        seeds = {}
        if isinstance(ys, dict):
            seeds = {str(k): str(v) for k, v in ys.items() if v is not None}
            ys = list(ys.keys())
        elif isinstance(ys, (BlobReference, str)):
            ys = [ys]
        losses = [str(y) for y in ys]
        proto, grads = _C.add_gradient_operators(self._net.SerializeToString(), losses, seeds)
        new = caffe2_pb2.NetDef()
        new.ParseFromString(proto)
        added = new.op[len(self._net.op):]
        self._ExtendOps(added)
        out = {}
        for blob, g in grads.items():
            if isinstance(g, tuple):
                out[BlobReference(blob, self)] = tuple(BlobReference(x, self) for x in g)
            else:
                out[BlobReference(blob, self)] = BlobReference(g, self)
        return out

    def RunAllOnGPU(self, gpu_id=0, use_cudnn=False):
        device = DeviceOption(caffe2_pb2.CUDA, gpu_id)
        self._net.device_option.CopyFrom(device)
        for op in self._net.op:
            op.device_option.CopyFrom(device)
            if use_cudnn:
                op.engine = "CUDNN"

    def RunAllOnCPU(self):
        device = DeviceOption(caffe2_pb2.CPU)
        self._net.device_option.CopyFrom(device)
        for op in self._net.op:
            op.device_option.CopyFrom(device)

    def Const(self, array, blob_out=None, dtype=None):
        """A GivenTensor*Fill of a NumPy array."""
        import numpy as np
        array = np.asarray(array, dtype=dtype)
        kinds = {np.dtype(np.float32): "GivenTensorFill", np.dtype(np.float64): "GivenTensorDoubleFill",
                 np.dtype(np.int32): "GivenTensorIntFill", np.dtype(np.int64): "GivenTensorInt64Fill",
                 np.dtype(np.bool_): "GivenTensorBoolFill"}
        if array.dtype not in kinds:
            raise TypeError("Const: unsupported dtype %s" % array.dtype)
        return self.__getattr__(kinds[array.dtype])(
            [], blob_out or 1, shape=list(array.shape), values=array.flatten().tolist())


def get_net_name(netlike):
    if isinstance(netlike, Net):
        return netlike.Name()
    if isinstance(netlike, caffe2_pb2.NetDef):
        return netlike.name
    return str(netlike)


# ---- plans ----------------------------------------------------------------------------------------

class ExecutionStep(object):
    """An ExecutionStep being built: nets or substeps, iterations, stop blob, concurrency."""

    def __init__(self, name, nets=None, num_iter=None):
        self._step = caffe2_pb2.ExecutionStep()
        self._step.name = name or "step"
        self._nets = []
        self._substeps = []
        if nets is not None:
            if not isinstance(nets, (list, tuple)):
                nets = [nets]
            for n in nets:
                self.AddNet(n)
        if num_iter is not None:
            self._step.num_iter = num_iter

    def Name(self):
        return self._step.name

    def Proto(self):
        return self._step

    def HasNets(self):
        return len(self._step.network) > 0

    def HasSubsteps(self):
        return len(self._step.substep) > 0

    def SetIter(self, num_iter):
        self._step.num_iter = num_iter

    def SetCreateWorkspace(self, create_workspace):
        self._step.create_workspace = create_workspace

    def SetNumConcurrentInstances(self, num):
        self._step.num_concurrent_instances = num

    def SetOnlyOnce(self, only_once):
        self._step.only_once = only_once

    def SetShouldStopBlob(self, should_stop_blob):
        self._step.should_stop_blob = str(should_stop_blob)

    def RunEveryMillis(self, interval):
        self._step.run_every_ms = interval

    def SetReportNet(self, report_net, report_interval):
        self._nets.append(report_net) if isinstance(report_net, Net) else None
        self._step.report_net = get_net_name(report_net)
        self._step.report_interval = report_interval

    def AddSubstep(self, substep):
        assert not self.HasNets(), "a step has either nets or substeps"
        self._substeps.append(substep)
        self._step.substep.add().CopyFrom(substep.Proto() if isinstance(substep, ExecutionStep)
                                          else substep)
        return self

    def SetConcurrentSubsteps(self, concurrent_substeps):
        self._step.concurrent_substeps = concurrent_substeps

    def AddNet(self, net):
        assert not self.HasSubsteps(), "a step has either nets or substeps"
        if isinstance(net, Net):
            self._nets.append(net)
        self._step.network.append(get_net_name(net))
        return self

    def get_all_nets(self):
        nets = list(self._nets)
        for s in self._substeps:
            if isinstance(s, ExecutionStep):
                nets += s.get_all_nets()
        return nets


class Plan(object):
    """A PlanDef: its nets and execution steps."""

    def __init__(self, name_or_step):
        self._plan = caffe2_pb2.PlanDef()
        self._net_names_used = set()
        if isinstance(name_or_step, ExecutionStep):
            self._plan.name = name_or_step.Name()
            self.AddStep(name_or_step)
        else:
            self._plan.name = str(name_or_step)

    def __str__(self):
        return self._plan.name

    def Proto(self):
        return self._plan

    def AddNets(self, nets):
        for net in nets:
            self.AddNet(net)

    def AddNet(self, net):
        proto = net.Proto() if isinstance(net, Net) else net
        if proto.name in self._net_names_used:
            return
        self._net_names_used.add(proto.name)
        self._plan.network.add().CopyFrom(proto)

    def Nets(self):
        return list(self._plan.network)

    def AddStep(self, step):
        assert isinstance(step, ExecutionStep)
        if not step.HasNets() and not step.HasSubsteps():
            return
        self._plan.execution_step.add().CopyFrom(step.Proto())
        self.AddNets(step.get_all_nets())


def create_plan(step):
    return Plan(step)


def to_execution_step(step_or_nets, default_name=None):
    if isinstance(step_or_nets, ExecutionStep):
        return step_or_nets
    step = ExecutionStep(default_name or "step")
    if isinstance(step_or_nets, (Net, caffe2_pb2.NetDef, str)):
        step.AddNet(step_or_nets)
    elif isinstance(step_or_nets, (list, tuple)) and all(isinstance(s, ExecutionStep) for s in step_or_nets):
        for s in step_or_nets:
            step.AddSubstep(s)
    elif isinstance(step_or_nets, (list, tuple)):
        for n in step_or_nets:
            step.AddNet(n)
    else:
        raise ValueError("cannot make an execution step of %r" % (step_or_nets,))
    return step


def execution_step(default_name, steps_or_nets, num_iter=None, report_net=None,
                   report_interval=None, concurrent_substeps=None, should_stop_blob=None,
                   only_once=None, num_concurrent_instances=None, create_workspace=False,
                   run_every_ms=None):
    """Caffe2's execution_step: a step running ``steps_or_nets`` with the given options."""
    assert should_stop_blob is None or num_iter is None, "num_iter or should_stop_blob, not both"
    step = ExecutionStep(default_name)
    if steps_or_nets is not None:
        if isinstance(steps_or_nets, ExecutionStep):
            step.AddSubstep(steps_or_nets)
        elif isinstance(steps_or_nets, (Net, caffe2_pb2.NetDef, str)):
            step.AddNet(steps_or_nets)
        elif isinstance(steps_or_nets, (list, tuple)):
            for s in steps_or_nets:
                if isinstance(s, ExecutionStep):
                    step.AddSubstep(s)
                else:
                    step.AddNet(s)
    if num_iter is not None:
        step.SetIter(num_iter)
    if should_stop_blob is not None:
        step.SetShouldStopBlob(should_stop_blob)
    if only_once is not None:
        step.SetOnlyOnce(only_once)
    if concurrent_substeps is not None:
        step.SetConcurrentSubsteps(concurrent_substeps)
    if report_net is not None:
        step.SetReportNet(report_net, report_interval or 1)
    if num_concurrent_instances is not None:
        step.SetNumConcurrentInstances(num_concurrent_instances)
    if create_workspace:
        step.SetCreateWorkspace(True)
    if run_every_ms:
        step.RunEveryMillis(run_every_ms)
    return step


__all__ = ["BlobReference", "ScopedBlobReference", "ScopedName", "Net", "CreateOperator",
           "NameScope", "DeviceScope",
           "DeviceOption", "ExecutionStep", "Plan", "execution_step", "IsOperator",
           "RegisteredOperators"]
