"""Net drawings with shapes: the LeNet with its init net, ResNet-50 from make_model, an imported
ONNX model (tools/draw_net, python -m halfcaf.net_drawer)."""
import os
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from halfcaf import core, net_drawer, workspace

from conftest import REPO

SVG = "{http://www.w3.org/2000/svg}"
LENET = os.path.join(REPO, "models", "lenet")
ONNX_CONV = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx"


def edge_labels(path):
    tree = ET.parse(path)
    labels = []
    for g in tree.iter(SVG + "g"):
        if g.get("class") == "edge":
            labels += [t.text for t in g.iter(SVG + "text") if t.text]
    return labels


def node_titles(path, kind):
    tree = ET.parse(path)
    return [g.find(SVG + "title").text for g in tree.iter(SVG + "g") if g.get("class") == kind]


def test_infer_blob_shapes_from_an_init_net_and_inputs():
    init = core.Net("shapes_init")
    init.XavierFill([], "w", shape=[10, 4])
    init.ConstantFill([], "b", shape=[10], value=0.0)
    net = core.Net("shapes")
    net.Relu(net.FC(["x", "w", "b"], "y"), "z")
    shapes = net_drawer.InferBlobShapes(net, init, {"x": [3, 4]})
    assert shapes["y"] == ([3, 10], "float") and shapes["z"] == ([3, 10], "float")
    assert shapes["w"] == ([10, 4], "float")
    # An input of unknown shape leaves what follows from it out.
    assert "y" not in net_drawer.InferBlobShapes(net, init, {})
    workspace.FeedBlob("kept", np.ones(2, np.float32))
    net_drawer.InferBlobShapes(net, init, {"x": [3, 4]})
    assert workspace.HasBlob("kept")  # the caller's workspace is left alone


def test_lenet_with_its_init_net(tmp_path):
    out = tmp_path / "lenet.svg"
    subprocess.run([os.path.join(REPO, "tools", "draw_net"),
                    "--net", os.path.join(LENET, "lenet_train_net.pbtxt"),
                    "--init_net", os.path.join(LENET, "lenet_init_net.pbtxt"),
                    "--input_shape", "data=64,1,28,28", "--input_shape", "label=64:int32",
                    "--output", str(out)], check=True, capture_output=True)
    labels = edge_labels(out)
    for want in ["float[64, 1, 28, 28]", "float[20, 1, 5, 5]", "float[64, 20, 24, 24]",
                 "float[64, 50, 4, 4]", "float[64, 10]", "int32[64]"]:
        assert want in labels, want
    ops = [t for t in node_titles(out, "node") if "(op#" in t]
    assert len(ops) == 9 and ops[0] == "conv1/Conv (op#0)"


def test_resnet50_from_make_model(tmp_path):
    make_model = os.path.join(os.environ.get("HALFCAF_BUILD_DIR", os.path.join(REPO, "build")),
                              "bin", "make_model")
    if not os.path.exists(make_model):
        pytest.skip("make_model is not built")
    subprocess.run([make_model, "--model", "resnet50", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    out = tmp_path / "resnet50.svg"
    subprocess.run([os.path.join(REPO, "tools", "draw_net"),
                    "--net", str(tmp_path / "train_net.pbtxt"),
                    "--init_net", str(tmp_path / "init_net.pbtxt"),
                    "--input_shape", "data=8,3,224,224", "--output", str(out)],
                   check=True, capture_output=True)
    labels = edge_labels(out)
    assert "float[8, 64, 112, 112]" in labels and "float[8, 2048, 7, 7]" in labels
    train = core.Net(net_drawer._LoadNet(str(tmp_path / "train_net.pbtxt")))
    assert len(train.Proto().op) > 150


@pytest.mark.skipif(not os.path.exists(ONNX_CONV), reason="libonnx-testdata is not installed")
def test_an_imported_onnx_model(tmp_path):
    out = tmp_path / "conv.svg"
    subprocess.run([os.path.join(REPO, "tools", "draw_net"), "--net", ONNX_CONV, "--output",
                    str(out)], check=True, capture_output=True)
    labels = edge_labels(out)
    assert "float[1, 1, 7, 5]" in labels and "float[1, 1, 3, 3]" in labels


def test_bad_shape_arguments(tmp_path):
    r = subprocess.run([os.path.join(REPO, "tools", "draw_net"),
                        "--net", os.path.join(LENET, "lenet_train_net.pbtxt"),
                        "--input_shape", "data=64,x", "--output", str(tmp_path / "x.svg")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--input_shape" in r.stderr
    r = subprocess.run([os.path.join(REPO, "tools", "draw_net"),
                        "--net", os.path.join(LENET, "lenet_train_net.pbtxt"),
                        "--init_net", str(tmp_path / "missing.pbtxt")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "missing.pbtxt" in r.stderr
