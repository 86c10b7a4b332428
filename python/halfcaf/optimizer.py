"""Optimizers (Caffe2's caffe2.python.optimizer): ``build_sgd(model, base_learning_rate=0.1,
policy="step", stepsize=1, gamma=0.999)`` and the others append to ``model.net`` the iteration
counter (``optimizer_iteration``, AtomicIter under ``iteration_mutex``), a LearningRate op and one
update op per parameter, and to ``model.param_init_net`` the state those need. The ops and signs
are Caffe2's: WeightedSum with a negative rate for plain SGD, MomentumSGDUpdate with a positive
one, Adam / Adagrad / RmsProp with a negative one."""
from halfcaf import core, scope
from halfcaf.proto import caffe2_pb2

OPTIMIZER_ITERATION_NAME = "optimizer_iteration"
ITERATION_MUTEX_NAME = "iteration_mutex"
_optimizer_instance_count = {}


def BuildUniqueMutexIter(init_net, net, iter=None, iter_mutex=None, iter_val=0):
    """The shared int64 iteration counter (on the CPU), advanced once per run of ``net``."""
    iter = iter or OPTIMIZER_ITERATION_NAME
    iter_mutex = iter_mutex or ITERATION_MUTEX_NAME
    if not init_net.BlobIsDefined(iter):
        with scope.DeviceScope(core.DeviceOption(caffe2_pb2.CPU)):
            iteration = init_net.ConstantFill([], iter, shape=[1], value=iter_val,
                                              dtype=caffe2_pb2.TensorProto.INT64)
            mutex = init_net.CreateMutex([], [iter_mutex])
            net.AtomicIter([mutex, iteration], [iteration])
    else:
        iteration = core.BlobReference(iter, init_net)
    return iteration


class Optimizer(object):
    def __init__(self):
        name = type(self).__name__
        self._instance_num = _optimizer_instance_count.get(name, 0)
        _optimizer_instance_count[name] = self._instance_num + 1
        self._lr_multiplier = None
        self._local_lr_multiplier = None

    def __call__(self, net, param_init_net, param_info):
        self._run(net, param_init_net, param_info)

    def _run(self, net, param_init_net, param_info):
        raise TypeError("%s does not define its update" % type(self).__name__)

    def make_unique_blob_name(self, base_str):
        dev = scope.CurrentDeviceScope()
        suffix = "cpu" if dev is None or dev.device_type == caffe2_pb2.CPU else \
            "gpu_%d" % dev.device_id
        return "%s_%d_%s_%s" % (type(self).__name__, self._instance_num, base_str, suffix)

    def build_lr(self, net, param_init_net, base_learning_rate, learning_rate_blob=None,
                 policy="fixed", iter_val=0, **kwargs):
        """LearningRate(iteration) with base_lr = -base_learning_rate (Caffe2's sign)."""
        if learning_rate_blob is None:
            learning_rate_blob = self.make_unique_blob_name("lr")
        iteration = BuildUniqueMutexIter(param_init_net, net, iter_val=iter_val)
        if not net.BlobIsDefined(learning_rate_blob):
            lr = net.LearningRate([iteration], learning_rate_blob, base_lr=-base_learning_rate,
                                  policy=policy, **kwargs)
        else:
            lr = core.BlobReference(learning_rate_blob, net)
        return lr, iteration

    @staticmethod
    def dedup(net, sparse_dedup_aggregator, grad):
        if isinstance(grad, tuple):
            raise ValueError("sparse gradients are not supported by this optimizer")
        return grad

    def _one(self, param_init_net):
        dev = scope.CurrentDeviceScope() or core.DeviceOption(caffe2_pb2.CPU)
        name = "ONE_{}_{}{}".format(dev.device_type, dev.device_id, dev.node_name)
        if param_init_net.BlobIsDefined(name):
            return core.BlobReference(name, param_init_net)
        return param_init_net.ConstantFill([], name, shape=[1], value=1.0)


class SgdOptimizer(Optimizer):
    def __init__(self, base_learning_rate=0.01, policy="fixed", momentum=0.0, nesterov=True,
                 sparse_dense_momentum=False, **kwargs):
        super().__init__()
        self.base_learning_rate = base_learning_rate
        self.policy = policy
        self.momentum = momentum
        self.nesterov = nesterov
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if self.base_learning_rate == 0:
            return
        assert self.base_learning_rate > 0, "the learning rate must be positive"
        lr_sign = -1 if self.momentum else 1
        lr, _ = self.build_lr(net, param_init_net, self.base_learning_rate * lr_sign,
                              policy=self.policy, **self.init_kwargs)
        grad = self.dedup(net, None, grad)
        if self.momentum > 0:
            momentum_data = param_init_net.ConstantFill(param, str(param) + "_momentum", value=0.)
            net.MomentumSGDUpdate([grad, momentum_data, lr, param], [grad, momentum_data, param],
                                  momentum=self.momentum, nesterov=int(self.nesterov))
        else:
            net.WeightedSum([param, self._one(param_init_net), grad, lr], param)


class MultiPrecisionSgdOptimizer(SgdOptimizer):
    """Momentum SGD on an FP32 master of each parameter whose gradient is FP16 (a parameter
    with ``blob_copy``: {FLOAT: master}), refreshing the FP16 parameter from the master."""

    def _run(self, net, param_init_net, param_info):
        copies = param_info.blob_copy or {}
        master = copies.get(caffe2_pb2.TensorProto.FLOAT)
        if master is None:
            return SgdOptimizer._run(self, net, param_init_net, param_info)
        param, grad = param_info.blob, param_info.grad
        lr, _ = self.build_lr(net, param_init_net, -self.base_learning_rate, policy=self.policy,
                              **self.init_kwargs)
        low = getattr(param_info, "low_type", "float16")
        from halfcaf import mixed_precision
        momentum_data = param_init_net.ConstantFill(master, str(param) + "_momentum", value=0.)
        grad_fp32 = net.__getattr__(mixed_precision.to_float_op(low))(grad, str(grad) + "_fp32")
        net.MomentumSGDUpdate([grad_fp32, momentum_data, lr, master],
                              [grad_fp32, momentum_data, master],
                              momentum=self.momentum, nesterov=int(self.nesterov))
        net.__getattr__(mixed_precision.to_low_op(low))(master, param)


class FP16SgdOptimizer(SgdOptimizer):
    """FP32MomentumSGDUpdate on the FP32 master (with weight decay) when the parameter has one,
    else FP16MomentumSGDUpdate on the FP16 parameter itself."""

    def __init__(self, base_learning_rate=0.1, momentum=0.9, policy="fixed", nesterov=True,
                 weight_decay=0.0001, **kwargs):
        super().__init__(base_learning_rate, policy, momentum, nesterov, **kwargs)
        self.weight_decay = weight_decay

    def _run(self, net, param_init_net, param_info):
        copies = param_info.blob_copy or {}
        master = copies.get(caffe2_pb2.TensorProto.FLOAT)
        param, grad = param_info.blob, param_info.grad
        lr, _ = self.build_lr(net, param_init_net, -self.base_learning_rate, policy=self.policy,
                              **self.init_kwargs)
        if master is not None:
            momentum_data = param_init_net.ConstantFill(master, str(param) + "_momentum", value=0.)
            grad_fp32 = net.HalfToFloat(grad, str(grad) + "_fp32")
            net.FP32MomentumSGDUpdate([grad_fp32, momentum_data, lr, master],
                                      [grad_fp32, momentum_data, master],
                                      momentum=self.momentum, nesterov=int(self.nesterov),
                                      weight_decay=self.weight_decay)
            net.FloatToHalf(master, param)
        else:
            momentum_data = param_init_net.ConstantFill(param, str(param) + "_momentum", value=0.)
            net.FP16MomentumSGDUpdate([grad, momentum_data, lr, param],
                                      [grad, momentum_data, param],
                                      momentum=self.momentum, nesterov=int(self.nesterov),
                                      weight_decay=self.weight_decay)


class AdamOptimizer(Optimizer):
    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, policy="fixed",
                 **kwargs):
        super().__init__()
        self.alpha, self.beta1, self.beta2, self.epsilon = alpha, beta1, beta2, epsilon
        self.policy = policy
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, self.dedup(net, None, param_info.grad)
        if self.alpha <= 0:
            return
        lr, iteration = self.build_lr(net, param_init_net, self.alpha, policy=self.policy,
                                      **self.init_kwargs)
        m1 = param_init_net.ConstantFill([param], str(param) + "_first_moment", value=0.0)
        m2 = param_init_net.ConstantFill([param], str(param) + "_second_moment", value=0.0)
        net.Adam([param, m1, m2, grad, lr, iteration], [param, m1, m2], beta1=self.beta1,
                 beta2=self.beta2, epsilon=self.epsilon)


class AdagradOptimizer(Optimizer):
    def __init__(self, alpha=0.01, epsilon=1e-4, decay=1, policy="fixed", **kwargs):
        super().__init__()
        self.alpha, self.epsilon, self.decay, self.policy = alpha, epsilon, decay, policy
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, self.dedup(net, None, param_info.grad)
        if self.alpha <= 0:
            return
        lr, _ = self.build_lr(net, param_init_net, self.alpha, policy=self.policy,
                              **self.init_kwargs)
        moment = param_init_net.ConstantFill([param], str(param) + "_squared_sum", value=0.0)
        net.Adagrad([param, moment, grad, lr], [param, moment], epsilon=self.epsilon,
                    decay=float(self.decay))


class RmsPropOptimizer(Optimizer):
    def __init__(self, alpha=0.01, decay=0.9, momentum=0.0, epsilon=1e-5, policy="fixed",
                 **kwargs):
        super().__init__()
        self.alpha, self.decay, self.momentum, self.epsilon = alpha, decay, momentum, epsilon
        self.policy = policy
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, self.dedup(net, None, param_info.grad)
        assert self.alpha > 0
        lr, _ = self.build_lr(net, param_init_net, self.alpha, policy=self.policy,
                              **self.init_kwargs)
        ms = param_init_net.ConstantFill([param], str(param) + "_mean_squares", value=0.0)
        mom = param_init_net.ConstantFill([param], str(param) + "_momentum", value=0.0)
        grad_o = str(param) + "_grad_o"
        net.RmsProp([grad, ms, mom, lr], [grad_o, ms, mom], decay=self.decay,
                    momentum=self.momentum, epsilon=self.epsilon)
        one = self._one(param_init_net)
        net.WeightedSum([param, one, grad_o, one], param)


def _build(model, optimizer, weights_only=False, max_gradient_norm=None):
    if max_gradient_norm is not None:
        raise ValueError("max_gradient_norm is not supported")
    params = model.GetParams()
    if weights_only:
        params = [p for p in params if p in model.weights]
    infos = model.GetOptimizationParamInfo(params)
    if not infos:
        raise ValueError("model %s has no parameter with a gradient: call "
                         "model.AddGradientOperators first" % model.name)
    for info in infos:
        optimizer(model.net, model.param_init_net, info)
    return optimizer


def build_sgd(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
              **kwargs):
    return _build(model, SgdOptimizer(base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm)


def build_multi_precision_sgd(model, base_learning_rate, max_gradient_norm=None,
                              allow_lr_injection=False, **kwargs):
    return _build(model, MultiPrecisionSgdOptimizer(base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm)


def build_fp16_sgd(model, base_learning_rate, **kwargs):
    return _build(model, FP16SgdOptimizer(base_learning_rate, **kwargs))


def build_adam(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
               **kwargs):
    return _build(model, AdamOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm)


def build_adagrad(model, base_learning_rate, parameters=None, max_gradient_norm=None,
                  allow_lr_injection=False, **kwargs):
    return _build(model, AdagradOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm)


def build_rms_prop(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
                   **kwargs):
    return _build(model, RmsPropOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm)
