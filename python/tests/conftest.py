import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package in python/halfcaf
REPO = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(autouse=True)
def fresh_workspace():
    from halfcaf import workspace
    workspace.SwitchWorkspace("default")
    workspace.ResetWorkspace()
    yield


def load_net(path):
    """A NetDef from a protobuf text file."""
    from google.protobuf import text_format
    from halfcaf.proto import caffe2_pb2
    net = caffe2_pb2.NetDef()
    with open(path) as f:
        text_format.Merge(f.read(), net)
    return net


def fc_softmax_model(name):
    """A ModelHelper: FC 4 -> 3 of blob "x", SoftmaxWithLoss with "label", gradients added."""
    from halfcaf import brew, model_helper
    model = model_helper.ModelHelper(name=name)
    fc = brew.fc(model, "x", "fc", dim_in=4, dim_out=3)
    _, loss = model.net.SoftmaxWithLoss([fc, "label"], ["softmax", "loss"])
    model.AddGradientOperators([loss])
    return model
