"""Fully connected layers: FC (Y = X W^T + b) and FCTransposed (Y = X W + b)."""
from halfcaf.initializers import update_initializer
from halfcaf.parameter_info import ParameterTags


def _fc_or_transposed(model, op_call, blob_in, blob_out, dim_in, dim_out, weight_init=None,
                      bias_init=None, WeightInitializer=None, BiasInitializer=None,
                      transposed=False, **kwargs):
    WeightInitializer = update_initializer(WeightInitializer, weight_init, ("XavierFill", {}))
    BiasInitializer = update_initializer(BiasInitializer, bias_init, ("ConstantFill", {}))
    blob_out = blob_out or model.net.NextName()
    shape = [dim_in, dim_out] if transposed else [dim_out, dim_in]
    weight = model.create_param(param_name=str(blob_out) + "_w", shape=shape,
                                initializer=WeightInitializer, tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=str(blob_out) + "_b", shape=[dim_out],
                              initializer=BiasInitializer, tags=ParameterTags.BIAS)
    kwargs.pop("enable_tensor_core", None)
    kwargs.pop("float16_compute", None)
    return op_call([blob_in, weight, bias], blob_out, **kwargs)


def fc(model, blob_in, blob_out, dim_in, dim_out, weight_init=None, bias_init=None,
       WeightInitializer=None, BiasInitializer=None, **kwargs):
    """FC with weight <blob_out>_w [dim_out, dim_in] (Xavier) and bias <blob_out>_b (zeros)."""
    return _fc_or_transposed(model, model.net.FC, blob_in, blob_out, dim_in, dim_out, weight_init,
                             bias_init, WeightInitializer, BiasInitializer, **kwargs)


def fc_transposed(model, blob_in, blob_out, dim_in, dim_out, weight_init=None, bias_init=None,
                  WeightInitializer=None, BiasInitializer=None, **kwargs):
    """FCTransposed with weight [dim_in, dim_out]."""
    return _fc_or_transposed(model, model.net.FCTransposed, blob_in, blob_out, dim_in, dim_out,
                             weight_init, bias_init, WeightInitializer, BiasInitializer,
                             transposed=True, **kwargs)
