"""Shape and layout helpers."""


def concat(model, blobs_in, blob_out, **kwargs):
    """Concat (axis or order); the split sizes go to _<blob_out>_concat_dims."""
    return model.net.Concat(blobs_in, [blob_out, "_" + str(blob_out) + "_concat_dims"],
                            **kwargs)[0]


def depth_concat(model, blobs_in, blob_out, **kwargs):
    """Concat along channels (Caffe2's DepthConcat)."""
    return concat(model, blobs_in, blob_out, **kwargs)


def transpose(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    return model.net.Transpose(blob_in, blob_out, **kwargs)


def flatten(model, blob_in, blob_out, **kwargs):
    return model.net.Flatten(blob_in, blob_out, **kwargs)


def reshape(model, blob_in, blob_out, shape, **kwargs):
    """Reshape to ``shape``; the old shape goes to _<blob_out>_old_shape."""
    return model.net.Reshape(blob_in, [blob_out, "_" + str(blob_out) + "_old_shape"],
                             shape=shape, **kwargs)[0]
