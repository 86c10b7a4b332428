"""Dropout."""


def dropout(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    """Dropout (ratio, is_test); training nets keep the mask _<blob_out>_mask for the gradient."""
    if use_cudnn:
        kwargs["engine"] = "CUDNN"
    if kwargs.get("is_test", 0):
        return model.net.Dropout(blob_in, [blob_out], **kwargs)
    return model.net.Dropout(blob_in, [blob_out, "_" + str(blob_out) + "_mask"], **kwargs)[0]
