"""Data parallelism over the C++ replication (models/data_parallel.h): one replica of a
single-device training net per device, its blobs renamed ``<prefix>/<blob>`` (``cpu_0/fc_w``,
``gpu_1/...``), gradients summed across replicas by Copy + Sum ops in a binary tree (no NCCL),
then every replica updates its own parameters from the same averaged gradient.

    model = model_helper.ModelHelper(name="mlp")
    ... forward, model.AddGradientOperators([loss]) ...
    init, train = data_parallel.parallelize(
        model, data_parallel.cpu_devices(2),
        build_optimizer=lambda m: optimizer.build_sgd(m, base_learning_rate=0.1))
    workspace.RunNetOnce(init)
    # feed cpu_0/data, cpu_1/data, ... then:
    workspace.CreateNet(train); workspace.RunNet(train)
"""
from halfcaf import _C, core
from halfcaf.proto import caffe2_pb2


def cpu_devices(n):
    """n CPU "devices" (replicas sharing the CPU)."""
    return [(caffe2_pb2.CPU, i) for i in range(n)]


def cuda_devices(ids):
    return [(caffe2_pb2.CUDA, int(i)) for i in ids]


def prefixes(devices):
    """The blob-name prefix of each replica: cpu_<i> or gpu_<i>."""
    return _C.replica_prefixes(list(devices))


def _netdef(net):
    return net.Proto() if hasattr(net, "Proto") else net


def replicate(net, devices, shared=(), cpu_ops=()):
    """One renamed copy of ``net`` per device, as core.Nets; blobs in ``shared`` keep their
    names, ops whose type is in ``cpu_ops`` stay on the CPU."""
    data = _netdef(net).SerializeToString()
    out = []
    for i in range(len(devices)):
        proto = caffe2_pb2.NetDef()
        proto.ParseFromString(_C.replicate_net(data, list(devices), i, set(shared), set(cpu_ops)))
        out.append(core.Net(proto))
    return out


def add_all_reduce(net, blobs, devices):
    """Appends to ``net`` (a core.Net) the ops that sum ``<prefix>/<blob>`` over the replicas
    for each blob and copy the sum back to every replica."""
    proto = caffe2_pb2.NetDef()
    proto.ParseFromString(_C.add_all_reduce(_netdef(net).SerializeToString(),
                                            [str(b) for b in blobs], list(devices)))
    added = proto.op[len(_netdef(net).op):]
    net._ExtendOps(added)
    return net


def _concat(name, nets):
    out = core.Net(name)
    for n in nets:
        out._ExtendOps(n.Proto().op)
    return out


def parallelize(model, devices, build_optimizer=None, shared=(), cpu_ops=()):
    """(init net, training net) running ``model`` (forward + backward, after
    AddGradientOperators) on every device: replicas of the model's nets, the all-reduce of every
    parameter's gradient, its average (Scale by 1/replicas), then ``build_optimizer(model)``'s
    update ops per replica."""
    if not model.gradient_ops_added:
        raise RuntimeError("call model.AddGradientOperators before parallelize")
    if len(devices) < 1:
        raise ValueError("parallelize needs at least one device")
    n_backward = len(model.net.Proto().op)
    if build_optimizer is not None:
        build_optimizer(model)
    backward = core.Net(caffe2_pb2.NetDef(name=model.net.Name() + "_fwd_bwd",
                                          op=model.net.Proto().op[:n_backward]))
    update = core.Net(caffe2_pb2.NetDef(name=model.net.Name() + "_update",
                                        op=model.net.Proto().op[n_backward:]))
    grads = [str(g) for g in model.param_to_grad.values() if not isinstance(g, tuple)]
    train = _concat(model.net.Name() + "_parallel", replicate(backward, devices, shared, cpu_ops))
    add_all_reduce(train, grads, devices)
    scale = 1.0 / len(devices)
    for i, prefix in enumerate(prefixes(devices)):
        device = core.DeviceOption(devices[i][0], devices[i][1])
        for g in grads:
            blob = prefix + "/" + g
            train.Proto().op.add().CopyFrom(
                core.CreateOperator("Scale", [blob], [blob], scale=scale, device_option=device))
    train._ExtendOps([op for net in replicate(update, devices, shared, cpu_ops)
                      for op in net.Proto().op])
    init = _concat(model.param_init_net.Name() + "_parallel",
                   replicate(model.param_init_net, devices, shared, cpu_ops))
    return init, train
