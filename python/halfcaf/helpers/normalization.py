"""Normalization layers."""
from halfcaf.initializers import update_initializer
from halfcaf.parameter_info import ParameterTags


def spatial_bn(model, blob_in, blob_out, dim_in, init_scale=1., init_bias=0.,
               ScaleInitializer=None, BiasInitializer=None, RunningMeanInitializer=None,
               RunningVarianceInitializer=None, order="NCHW", **kwargs):
    """SpatialBN: learned <blob_out>_s (scale) and <blob_out>_b (bias), running statistics
    <blob_out>_rm and <blob_out>_riv (computed parameters); in training (is_test unset) also the
    saved mean and inverse std outputs <blob_out>_sm, <blob_out>_siv."""
    blob_out = str(blob_out)
    ScaleInitializer = update_initializer(ScaleInitializer, ("ConstantFill", {"value": init_scale}),
                                          ("ConstantFill", {}))
    BiasInitializer = update_initializer(BiasInitializer, ("ConstantFill", {"value": init_bias}),
                                         ("ConstantFill", {}))
    RunningMeanInitializer = update_initializer(RunningMeanInitializer, ("ConstantFill", {"value": 0.0}),
                                                ("ConstantFill", {}))
    RunningVarianceInitializer = update_initializer(RunningVarianceInitializer,
                                                    ("ConstantFill", {"value": 1.0}),
                                                    ("ConstantFill", {}))
    scale = model.create_param(param_name=blob_out + "_s", shape=[dim_in],
                               initializer=ScaleInitializer, tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=blob_out + "_b", shape=[dim_in],
                              initializer=BiasInitializer, tags=ParameterTags.BIAS)
    running_mean = model.create_param(param_name=blob_out + "_rm", shape=[dim_in],
                                      initializer=RunningMeanInitializer,
                                      tags=ParameterTags.COMPUTED_PARAM)
    running_inv_var = model.create_param(param_name=blob_out + "_riv", shape=[dim_in],
                                         initializer=RunningVarianceInitializer,
                                         tags=ParameterTags.COMPUTED_PARAM)
    inputs = [blob_in, scale, bias, running_mean, running_inv_var]
    if kwargs.get("is_test", 0):
        return model.net.SpatialBN(inputs, [blob_out], order=order, **kwargs)
    outputs = [blob_out, running_mean, running_inv_var, blob_out + "_sm", blob_out + "_siv"]
    return model.net.SpatialBN(inputs, outputs, order=order, **kwargs)[0]


def lrn(model, blob_in, blob_out, order="NCHW", use_cudnn=False, **kwargs):
    """LRN (size, alpha, beta, bias); training nets keep its scale output <blob_out>_scale."""
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
    if kwargs.get("is_test", 0):
        return model.net.LRN(blob_in, [blob_out], order=order, **kwargs)
    return model.net.LRN(blob_in, [blob_out, "_" + str(blob_out) + "_scale"], order=order,
                         **kwargs)[0]
