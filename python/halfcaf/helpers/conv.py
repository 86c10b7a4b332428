"""Convolution layers: Conv (2-D and N-D), grouped, and ConvTranspose."""
from halfcaf.initializers import update_initializer
from halfcaf.parameter_info import ParameterTags


def _kernels(kernel, n):
    if isinstance(kernel, (list, tuple)):
        assert len(kernel) == n, "kernel %r for a %d-D convolution" % (kernel, n)
        return list(kernel)
    return [kernel] * n


def _params_and_engine(model, blob_in, blob_out, weight_shape, dim_out, WeightInitializer,
                       BiasInitializer, no_bias, use_cudnn, cudnn_exhaustive_search,
                       ws_nbytes_limit, kwargs):
    """[input, weight(, bias)] of a convolution and its engine arguments (into kwargs)."""
    weight = model.create_param(param_name=str(blob_out) + "_w", shape=weight_shape,
                                initializer=WeightInitializer, tags=ParameterTags.WEIGHT)
    inputs = [blob_in, weight]
    if not no_bias:
        bias = model.create_param(param_name=str(blob_out) + "_b", shape=[dim_out],
                                  initializer=BiasInitializer, tags=ParameterTags.BIAS)
        inputs.append(bias)
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
        kwargs["exhaustive_search"] = cudnn_exhaustive_search
        if ws_nbytes_limit:
            kwargs["ws_nbytes_limit"] = ws_nbytes_limit
    return inputs


def _conv_base(model, is_nd, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
               bias_init=None, WeightInitializer=None, BiasInitializer=None, group=1,
               transform_inputs=None, use_cudnn=False, order="NCHW",
               cudnn_exhaustive_search=False, ws_nbytes_limit=None, float16_compute=False,
               **kwargs):
    n = len(kernel) if is_nd else 2
    kernels = _kernels(kernel, n)
    if dim_in % group:
        raise ValueError("dim_in %d is not a multiple of group %d" % (dim_in, group))
    if order == "NCHW":
        weight_shape = [dim_out, dim_in // group] + kernels
    else:
        weight_shape = [dim_out] + kernels + [dim_in // group]
    WeightInitializer = update_initializer(WeightInitializer, weight_init, ("XavierFill", {}))
    BiasInitializer = update_initializer(BiasInitializer, bias_init, ("ConstantFill", {}))
    blob_out = blob_out or model.net.NextName()
    inputs = _params_and_engine(model, blob_in, blob_out, weight_shape, dim_out, WeightInitializer,
                                BiasInitializer, kwargs.pop("no_bias", False), use_cudnn,
                                cudnn_exhaustive_search, ws_nbytes_limit, kwargs)
    if is_nd:
        kwargs["kernels"] = kernels
    elif isinstance(kernel, (list, tuple)):
        kwargs["kernel_h"], kwargs["kernel_w"] = kernels
    else:
        kwargs["kernel"] = kernel
    if group != 1:
        kwargs["group"] = group
    return model.net.Conv(inputs, blob_out, order=order, **kwargs)


def conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None, bias_init=None,
         WeightInitializer=None, BiasInitializer=None, group=1, transform_inputs=None,
         order="NCHW", use_cudnn=False, cudnn_exhaustive_search=False, ws_nbytes_limit=None,
         float16_compute=False, **kwargs):
    """2-D Conv: weight <blob_out>_w [dim_out, dim_in/group, k, k] (NCHW), bias <blob_out>_b."""
    return _conv_base(model, False, blob_in, blob_out, dim_in, dim_out, kernel, weight_init,
                      bias_init, WeightInitializer, BiasInitializer, group, transform_inputs,
                      use_cudnn, order, cudnn_exhaustive_search, ws_nbytes_limit,
                      float16_compute, **kwargs)


def conv_nd(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None, bias_init=None,
            WeightInitializer=None, BiasInitializer=None, group=1, transform_inputs=None,
            order="NCHW", **kwargs):
    """N-D Conv (kernel a list, one size per spatial dim)."""
    return _conv_base(model, True, blob_in, blob_out, dim_in, dim_out, kernel, weight_init,
                      bias_init, WeightInitializer, BiasInitializer, group, transform_inputs,
                      order=order, **kwargs)


def group_conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
               bias_init=None, group=1, **kwargs):
    return conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init, bias_init,
                group=group, **kwargs)


def conv_transpose(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
                   bias_init=None, use_cudnn=False, order="NCHW",
                   cudnn_exhaustive_search=False, ws_nbytes_limit=None, **kwargs):
    """ConvTranspose: weight [dim_in, dim_out, k, k] (NCHW) or [dim_in, k, k, dim_out]."""
    weight_init = weight_init or ("XavierFill", {})
    bias_init = bias_init or ("ConstantFill", {})
    blob_out = blob_out or model.net.NextName()
    if order == "NCHW":
        weight_shape = [dim_in, dim_out, kernel, kernel]
    else:
        weight_shape = [dim_in, kernel, kernel, dim_out]
    inputs = _params_and_engine(model, blob_in, blob_out, weight_shape, dim_out, weight_init,
                                bias_init, kwargs.pop("no_bias", False), use_cudnn,
                                cudnn_exhaustive_search, ws_nbytes_limit, kwargs)
    return model.net.ConvTranspose(inputs, blob_out, kernel=kernel, order=order, **kwargs)
