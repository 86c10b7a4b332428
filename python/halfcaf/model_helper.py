"""ModelHelper (Caffe2's caffe2.python.model_helper): a training model as two nets, the
parameter initialization net ``param_init_net`` and the main ``net``, with its parameters, their
gradients after ``AddGradientOperators``, and default op arguments (``arg_scope``) that the
``brew`` helpers use."""
from halfcaf import core, scope
from halfcaf.initializers import ExternalInitializer, Initializer
from halfcaf.parameter_info import ParameterInfo, ParameterTags


class ModelHelper(object):

    def __init__(self, name=None, init_params=True, allow_not_known_ops=True,
                 skip_sparse_optim=False, param_model=None, arg_scope=None):
        self.net = core.Net(name or "model")
        self.name = self.net.Name()  # unique: workspace.RunNet(model.name) runs this net
        if param_model is not None:
            self.param_init_net = param_model.param_init_net
            self.param_to_grad = param_model.param_to_grad
            self.params = param_model.params
            self._parameters_info = param_model._parameters_info
            self._computed_params = param_model._computed_params
        else:
            self.param_init_net = core.Net(self.name + "_init")
            self.param_to_grad = {}
            self.params = []
            self._parameters_info = {}
            self._computed_params = []
        self._devices = []
        self.gradient_ops_added = False
        self.init_params = init_params
        self.allow_not_known_ops = allow_not_known_ops
        self.skip_sparse_optim = skip_sparse_optim
        self.weights = []
        self.biases = []
        self._arg_scope = {"order": "NCHW", "use_cudnn": True, "cudnn_exhaustive_search": False}
        if arg_scope is not None:
            self._arg_scope.update(arg_scope)
        self.grad_map = {}

    @property
    def arg_scope(self):
        return self._arg_scope

    def get_name(self):
        return self.name

    def Proto(self):
        return self.net.Proto()

    # -- parameters -------------------------------------------------------------------------------
    def _infer_param_shape(self, param):
        for op in self.param_init_net.Proto().op:
            if str(param) in op.output:
                for arg in op.arg:
                    if arg.name == "shape":
                        return list(arg.ints)
        return None

    def create_param(self, param_name, shape, initializer, tags=None):
        """A parameter filled by ``initializer`` (an Initializer, or a (op, kwargs) pair) in the
        init net (none when the model does not init params); returns its BlobReference."""
        if isinstance(param_name, core.BlobReference):
            param_name = str(param_name)
        else:
            param_name = core.ScopedName(str(param_name))
        if param_name in self._parameters_info:
            return self._parameters_info[param_name].blob
        if isinstance(initializer, tuple):
            initializer = Initializer(initializer[0], **initializer[1])
        if initializer is None or not self.init_params:
            initializer = ExternalInitializer()
        info = initializer.create_param(param_name, self.param_init_net, shape)
        info.blob = core.BlobReference(param_name, self.net)
        tags = tags if isinstance(tags, (list, tuple, set)) else ([tags] if tags else [])
        self._add_param(info.blob, tags, info.shape)
        return info.blob

    def _add_param(self, param, tags, shape=None):
        name = str(param)
        info = ParameterInfo(param_id=len(self._parameters_info), param=param, shape=shape)
        info.tags = set(tags)
        self._parameters_info[name] = info
        if ParameterTags.COMPUTED_PARAM in info.tags:
            self._computed_params.append(param)
        else:
            self.params.append(param)
        if ParameterTags.WEIGHT in info.tags:
            self.weights.append(param)
        elif ParameterTags.BIAS in info.tags:
            self.biases.append(param)

    def AddParameter(self, param, tags=None):
        assert isinstance(param, core.BlobReference)
        tags = tags if isinstance(tags, (list, tuple, set)) else ([tags] if tags else [])
        self._add_param(param, tags, self._infer_param_shape(param))

    def GetParams(self, namescope=None, top_scope=False):
        """The learned parameters, those under ``namescope`` (default: the current one)."""
        if namescope is None:
            namescope = scope.CurrentNameScope()
        elif namescope and not namescope.endswith(scope._NAMESCOPE_SEPARATOR):
            namescope += scope._NAMESCOPE_SEPARATOR
        if namescope == "":
            return list(self.params)
        return [p for p in self.params if str(p).startswith(namescope)]

    def GetComputedParams(self, namescope=None):
        if namescope is None:
            namescope = scope.CurrentNameScope()
        return [p for p in self._computed_params if str(p).startswith(namescope or "")]

    def GetAllParams(self, namescope=None):
        return self.GetParams(namescope) + self.GetComputedParams(namescope)

    def GetParamInfo(self, param):
        return self._parameters_info.get(str(param))

    # -- gradients --------------------------------------------------------------------------------
    def AddGradientOperators(self, *args, **kwargs):
        if self.gradient_ops_added:
            raise RuntimeError("AddGradientOperators was already called on this model")
        self.gradient_ops_added = True
        self.grad_map = self.net.AddGradientOperators(*args, **kwargs)
        self.param_to_grad = self.get_param_to_grad(self.params)
        for param, grad in self.param_to_grad.items():
            self._parameters_info[str(param)].grad = grad
        return self.grad_map

    def get_param_to_grad(self, params):
        out = {}
        for p in params:
            if p in self.grad_map:
                out[p] = self.grad_map[p]
        return out

    def GetOptimizationParamInfo(self, params=None):
        """ParameterInfo (blob, grad, shape, tags) of each parameter that has a gradient."""
        if params is None:
            params = self.GetParams()
        infos = []
        for p in params:
            info = self._parameters_info.get(str(p))
            if info is not None and p in self.param_to_grad:
                info.grad = self.param_to_grad[p]
                infos.append(info)
        return infos

    # -- inputs and ops ---------------------------------------------------------------------------
    def TensorProtosDBInput(self, unused_blob_in, blob_out, batch_size, db, db_type, **kwargs):
        """A DB reader (CreateDB in the init net) and TensorProtosDBInput reading batches."""
        dbreader_name = "dbreader_" + db
        dbreader = self.param_init_net.CreateDB([], dbreader_name, db=db, db_type=db_type)
        return self.net.TensorProtosDBInput(dbreader, blob_out, batch_size=batch_size, **kwargs)

    def GetDevices(self):
        return self._devices

    def __getattr__(self, op_type):
        """Ops called on the model go to its net (model.Accuracy, model.Iter, ...)."""
        if op_type.startswith("_"):
            raise AttributeError(op_type)
        if not core.IsOperator(op_type):
            raise AttributeError("'%s' is neither a ModelHelper method nor an operator type"
                                 % op_type)
        return self.net.__getattr__(op_type)

    def __dir__(self):
        return sorted(set(dir(type(self)) + list(self.__dict__) + core.RegisteredOperators()))

    def Validate(self):
        """Every op's outputs written once, except in-place updates (Caffe2's check)."""
        seen = {}
        for op in self.net.Proto().op:
            for o in op.output:
                if o in op.input:
                    continue
                seen[o] = seen.get(o, 0) + 1
        return [b for b, n in seen.items() if n > 1]


def ExtractPredictorNet(net_proto, input_blobs, output_blobs, device=None, renames=None,
                        disabled_inputs=None):
    """The ops of ``net_proto`` between ``input_blobs`` and ``output_blobs`` (forward only, no
    gradient or update ops), as a new Net, and the external inputs it reads."""
    input_set = set(str(b) for b in input_blobs)
    outputs = set(str(b) for b in output_blobs)
    renames = renames or {}
    ops = [op for op in net_proto.op if not op.is_gradient_op and "Gradient" not in op.type]
    # Walk back from the outputs: keep ops producing a needed blob.
    needed = set(outputs)
    keep = []
    for op in reversed(ops):
        if any(o in needed for o in op.output):
            keep.append(op)
            needed.update(i for i in op.input if i not in input_set)
    keep.reverse()
    predict = core.Net(net_proto.name + "_predict")
    for op in keep:
        new = predict.Proto().op.add()
        new.CopyFrom(op)
        new.input[:] = [renames.get(i, i) for i in op.input]
        new.output[:] = [renames.get(o, o) for o in op.output]
        if device is not None:
            new.device_option.CopyFrom(device)
    produced = set(o for op in keep for o in op.output)
    external = []
    for op in keep:
        for i in op.input:
            if i not in produced and i not in external:
                external.append(i)
    predict.Proto().external_input.extend(renames.get(i, i) for i in external)
    predict.Proto().external_output.extend(renames.get(o, o) for o in output_blobs)
    return predict, [renames.get(i, i) for i in external]
