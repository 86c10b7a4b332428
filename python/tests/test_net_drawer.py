"""net_drawer: graphs of real Caffe2 nets and of core.Nets with gradient and optimizer ops,
rendered to SVG by Graphviz; blob versions, minimal graphs, plans, JSON, and the command line."""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from google.protobuf import text_format

from halfcaf import core, net_drawer
from halfcaf.proto import caffe2_pb2

from conftest import REPO, load_net

CAFFE2_FIXTURES = os.path.join(REPO, "tests", "fixtures", "caffe2")
SVG = "{http://www.w3.org/2000/svg}"


def mnist_train_net():
    return load_net(os.path.join(CAFFE2_FIXTURES, "mnist_train_net.pbtxt"))


def mlp_net():
    return load_net(os.path.join(REPO, "tests", "fixtures", "mlp_net.pbtxt"))


def svg_elements(graph):
    """{node title: list of its label texts}, {edge title}, and {node title: fill colour} of the
    graph rendered by Graphviz."""
    svg = graph.create_svg()
    root = ET.fromstring(svg)  # raises on invalid XML
    assert root.tag == SVG + "svg"
    nodes, edges, fills = {}, set(), {}
    for g in root.iter(SVG + "g"):
        title = g.find(SVG + "title")
        if g.get("class") == "node":
            nodes[title.text] = [t.text for t in g.iter(SVG + "text")]
            shape = g.find(SVG + "polygon")
            if shape is None:
                shape = g.find(SVG + "ellipse")
            fills[title.text] = (shape.tag.replace(SVG, ""), (shape.get("fill") or "").lower())
        elif g.get("class") == "edge":
            edges.add(title.text)
    return nodes, edges, fills


def edge_pairs(graph):
    def name(n):
        return n[1:-1] if n.startswith('"') else n
    return {(name(e.get_source()), name(e.get_destination())) for e in graph.get_edges()}


def grad_net():
    """A core.Net with a forward pass, its gradient ops and an SGD update."""
    net = core.Net("train")
    fc = net.FC(["x", "w", "b"], "fc")
    relu = net.Relu(fc, "relu")
    softmax, loss = net.SoftmaxWithLoss([relu, "label"], ["softmax", "loss"])
    grads = net.AddGradientOperators([loss])
    net.Iter("iter", "iter")
    net.LearningRate("iter", "lr", base_lr=-0.1, policy="fixed")
    net.WeightedSum(["w", "ONE", grads["w"], "lr"], "w")
    net.MomentumSGDUpdate([grads["b"], "b_momentum", "lr", "b"], [grads["b"], "b_momentum", "b"])
    return net


# ---- GetPydotGraph ------------------------------------------------------------------------------

def test_real_caffe2_train_net_renders_every_op_and_blob():
    net = mnist_train_net()
    graph = net_drawer.GetPydotGraph(net)
    assert graph.get_name() == "mnist_train"
    nodes, edges, fills = svg_elements(graph)
    texts = [t for labels in nodes.values() for t in labels]
    for op_id, op in enumerate(net.op):
        assert "%s (op#%d)" % (op.type, op_id) in nodes
        assert "%s (op#%d)" % (op.type, op_id) in texts
    blobs = set(b for op in net.op for b in list(op.input) + list(op.output))
    for blob in blobs:
        assert blob in texts, blob
    # Each op node, and a node per version of each blob.
    versions = sum(1 for t in nodes if re.search(r"#\d+$", t) and "(op#" not in t)
    assert len(nodes) == len(net.op) + versions
    # "data" is written by Cast, Scale and StopGradient: three versions, a chain through the ops.
    assert {"data#0", "data#1", "data#2"} <= set(nodes)
    assert "data#3" not in nodes
    assert {"Cast (op#1)->data#0", "data#0->Scale (op#2)", "Scale (op#2)->data#1",
            "data#1->StopGradient (op#3)", "StopGradient (op#3)->data#2",
            "data#2->Conv (op#4)"} <= edges
    # The parameter update reads version 0 of the weight and writes version 1.
    assert "conv1_w#0->WeightedSum (op#28)" in edges
    assert "WeightedSum (op#28)->conv1_w#1" in edges
    # Shapes and colours: blobs are ellipses, ops boxes coloured by kind.
    assert fills["data#0"][0] == "ellipse"
    assert fills["Conv (op#4)"] == ("polygon", "#0f9d58")
    assert fills["StopGradient (op#3)"] == ("polygon", "#0f9d58")  # a forward op
    assert fills["FCGradient (op#19)"] == ("polygon", "#e8710a")
    assert fills["WeightedSum (op#28)"] == ("polygon", "#4285f4")
    assert fills["LearningRate (op#27)"] == ("polygon", "#4285f4")
    assert fills["Iter (op#26)"] == ("polygon", "#4285f4")


def test_mlp_edges_exactly():
    graph = net_drawer.GetPydotGraph(mlp_net(), rankdir="TB")
    assert graph.get_rankdir() == "TB"
    assert edge_pairs(graph) == {
        ("data#0", "fc1/FC (op#0)"), ("fc1_w#0", "fc1/FC (op#0)"), ("fc1_b#0", "fc1/FC (op#0)"),
        ("fc1/FC (op#0)", "fc1#0"),
        ("fc1#0", "Relu (op#1)"), ("Relu (op#1)", "fc1#1"),
        ("fc1#1", "fc2/FC (op#2)"), ("fc2_w#0", "fc2/FC (op#2)"), ("fc2_b#0", "fc2/FC (op#2)"),
        ("fc2/FC (op#2)", "fc2#0"),
        ("fc2#0", "Softmax (op#3)"), ("Softmax (op#3)", "softmax#0"),
    }
    labels = {n.get_name().strip('"'): n.get("label") for n in graph.get_nodes()}
    assert labels["fc1#0"] == labels["fc1#1"] == '"fc1"'
    assert labels["fc1/FC (op#0)"] == '"fc1/FC (op#0)"'
    assert len(graph.get_nodes()) == 4 + 9  # each node added once


def test_gradient_and_optimizer_ops_of_a_core_net():
    net = grad_net()
    ops = net.Proto().op
    types = [op.type for op in ops]
    assert "SoftmaxWithLossGradient" in types and "FCGradient" in types
    assert any(op.is_gradient_op for op in ops)
    nodes, edges, fills = svg_elements(net_drawer.GetPydotGraph(net))
    texts = [t for labels in nodes.values() for t in labels]
    for op_id, op in enumerate(ops):
        title = "%s (op#%d)" % (op.type, op_id)
        assert title in texts
        if op.type.endswith("Gradient"):
            expected = "#e8710a"
        elif op.type in ("Iter", "LearningRate", "WeightedSum", "MomentumSGDUpdate"):
            expected = "#4285f4"
        else:  # FC, Relu, SoftmaxWithLoss and the ConstantFill seeding the loss gradient
            expected = "#0f9d58"
        assert fills[title] == ("polygon", expected), title
    for blob in ["x", "w", "b", "label", "fc", "relu", "softmax", "loss", "w_grad", "b_grad",
                 "fc_grad", "relu_grad", "lr", "iter", "ONE", "b_momentum"]:
        assert blob in texts, blob
    # In-place updates: iter, w, b, b_grad and b_momentum get second versions.
    for blob in ["iter", "w", "b", "b_grad", "b_momentum"]:
        assert blob + "#1" in nodes, blob
    assert "w#2" not in nodes


def test_op_kinds():
    def op(t, grad=False):
        return core.CreateOperator(t, [], [], is_gradient_op=grad)
    assert net_drawer.IsGradientOp(op("ReluGradient"))
    assert net_drawer.IsGradientOp(op("ConstantFill", grad=True))
    assert not net_drawer.IsGradientOp(op("StopGradient"))
    assert not net_drawer.IsGradientOp(op("Relu"))
    for t in ["MomentumSGDUpdate", "MixedPrecisionAdamUpdate", "Adam", "WeightedSum", "Iter",
              "AtomicIter", "LearningRate"]:
        assert net_drawer.IsOptimizerOp(op(t)), t
    assert not net_drawer.IsOptimizerOp(op("WeightedSumGradient"))
    assert net_drawer.OpStyle(op("WeightedSumGradient")) is net_drawer.GRADIENT_OP_STYLE
    assert net_drawer.OpStyle(op("FC")) is net_drawer.OP_STYLE


def test_net_netdef_and_op_list_draw_the_same():
    net = grad_net()
    a = net_drawer.GetPydotGraph(net).to_string()
    b = net_drawer.GetPydotGraph(net.Proto()).to_string()
    c = net_drawer.GetPydotGraph(list(net.Proto().op), name=net.Name()).to_string()
    assert a == b == c
    assert net_drawer.GetPydotGraph(list(net.Proto().op)).get_name() == "unnamed"
    with pytest.raises(TypeError, match="OperatorDefs"):
        net_drawer.GetPydotGraph(["not an op"])


def test_custom_node_producers():
    producer = net_drawer.GetOpNodeProducer(True, shape="hexagon", color="#123456")
    blob_producer = net_drawer.GetBlobNodeProducer(shape="octagon")
    graph = net_drawer.GetPydotGraph(mlp_net(), op_node_producer=producer,
                                     blob_node_producer=blob_producer)
    nodes = {n.get_name().strip('"'): n for n in graph.get_nodes()}
    assert nodes["Relu (op#1)"].get("label") == '"Relu (op#1)\\nfc1"'
    assert nodes["Relu (op#1)"].get("color") == "#123456"
    assert nodes["data#0"].get("shape") == "octagon"
    svg_nodes, _, _ = svg_elements(graph)
    assert svg_nodes["fc2/FC (op#2)"] == ["fc2/FC (op#2)", "fc2"]


def test_awkward_blob_names_stay_valid():
    names = ["a:b", 'quo"te', "back\\slash", "grüße", "graph", "x y/z:0", "end\\", 'q\\"']
    ops = [core.CreateOperator("Relu", [names[i]], [names[i + 1]]) for i in range(len(names) - 1)]
    graph = net_drawer.GetPydotGraph(ops, name="odd name:1")
    nodes, edges, _ = svg_elements(graph)
    texts = [t for labels in nodes.values() for t in labels]
    for n in names:
        assert n in texts, n  # labels show the name as it is
        # Node ids keep backslashes doubled (Graphviz keeps "\\" in ids), so they stay distinct.
        assert n.replace("\\", "\\\\") + "#0" in nodes, n
    assert len(nodes) == len(ops) + len(names)
    assert "a:b#0->Relu (op#0)" in edges and "Relu (op#0)->quo\"te#0" in edges


# ---- GetPydotGraphMinimal -----------------------------------------------------------------------

def test_minimal_graph_has_only_op_nodes():
    net = mnist_train_net()
    graph = net_drawer.GetPydotGraphMinimal(net)
    nodes, edges, _ = svg_elements(graph)
    assert set(nodes) == {"%s (op#%d)" % (op.type, i) for i, op in enumerate(net.op)}
    assert "Softmax (op#11)->LabelCrossEntropy (op#12)" in edges
    assert "Softmax (op#11)->LabelCrossEntropyGradient (op#17)" in edges
    # One edge per pair of ops, even when an op reads two blobs of the same op.
    assert len(graph.get_edges()) == len(edge_pairs(graph))


def test_minimal_graph_edges_and_minimal_dependency():
    ops = [core.CreateOperator("Relu", ["x"], ["y"]),           # a
           core.CreateOperator("Relu", ["y"], ["z"]),           # b
           core.CreateOperator("Add", ["y", "z"], ["w"]),       # c reads from a and b
           core.CreateOperator("Add", ["w", "w"], ["v"])]       # d reads w twice
    a, b, c, d = ["Relu (op#0)", "Relu (op#1)", "Add (op#2)", "Add (op#3)"]
    full = net_drawer.GetPydotGraphMinimal(ops)
    assert edge_pairs(full) == {(a, b), (a, c), (b, c), (c, d)}
    assert len(full.get_edges()) == 4
    minimal = net_drawer.GetPydotGraphMinimal(ops, minimal_dependency=True, rankdir="TB")
    assert edge_pairs(minimal) == {(a, b), (b, c), (c, d)}
    assert len(minimal.get_nodes()) == 4


# ---- plans and JSON -----------------------------------------------------------------------------

def test_operator_map_for_plan():
    plan = caffe2_pb2.PlanDef()
    plan.name = "plan"
    plan.network.add().CopyFrom(mlp_net())
    unnamed = plan.network.add()
    unnamed.op.add().CopyFrom(core.CreateOperator("Relu", ["a"], ["b"]))
    op_map = net_drawer.GetOperatorMapForPlan(plan)
    assert list(op_map) == ["planmlp", "plan_network_1"]
    assert [op.type for op in op_map["planmlp"]] == ["FC", "Relu", "FC", "Softmax"]
    assert [op.type for op in op_map["plan_network_1"]] == ["Relu"]


def test_graph_in_json(tmp_path):
    path = str(tmp_path / "g.json")
    net_drawer.GetGraphInJson(mlp_net(), path)
    with open(path) as f:
        data = json.load(f)
    nodes = data["nodes"]
    assert [n["id"] for n in nodes] == list(range(len(nodes)))
    ops = [n for n in nodes if n["type"] == "op"]
    assert [(n["label"], n["op_id"]) for n in ops] == [("fc1/FC", 0), ("Relu", 1), ("fc2/FC", 2),
                                                       ("Softmax", 3)]
    assert sorted(n["label"] for n in nodes if n["type"] == "blob") == sorted(
        ["data", "fc1_w", "fc1_b", "fc1", "fc1", "fc2_w", "fc2_b", "fc2", "softmax"])
    by_id = {n["id"]: n for n in nodes}
    edges = [(by_id[e["source"]]["label"], by_id[e["target"]]["label"]) for e in data["edges"]]
    assert len(edges) == 12
    assert ("fc1", "Relu") in edges and ("Relu", "fc1") in edges
    # Relu writes a new "fc1" node, which fc2 reads.
    relu_out = [e["target"] for e in data["edges"] if by_id[e["source"]]["label"] == "Relu"][0]
    assert {"source": relu_out, "target": ops[2]["id"]} in data["edges"]


# ---- the command line ---------------------------------------------------------------------------

def test_cli_writes_svg_of_a_text_net(tmp_path, capsys):
    prefix = str(tmp_path / "out") + os.sep
    src = os.path.join(CAFFE2_FIXTURES, "mnist_deploy_net.pbtxt")
    assert net_drawer.main(["--input", src, "--output_prefix", prefix]) == 0
    path = prefix + "mnist_deploy.svg"
    assert capsys.readouterr().out.strip() == path
    root = ET.parse(path).getroot()
    texts = [t.text for t in root.iter(SVG + "text")]
    for word in ["Conv (op#0)", "Softmax (op#7)", "conv1_w", "pred_b", "softmax"]:
        assert word in texts


def test_cli_binary_net_minimal_png_and_dot(tmp_path):
    net = mnist_train_net()
    src = tmp_path / "train.pb"
    src.write_bytes(net.SerializeToString())
    prefix = str(tmp_path / "m_")
    assert net_drawer.main(["--input", str(src), "--output_prefix", prefix, "--minimal",
                            "--format", "png", "--rankdir", "TB"]) == 0
    with open(prefix + "mnist_train.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert net_drawer.main(["--input", str(src), "--output_prefix", prefix, "--minimal",
                            "--minimal_dependency", "--append_output", "--format", "dot"]) == 0
    with open(prefix + "mnist_train.dot") as f:
        dot = f.read()
    assert dot.startswith("digraph mnist_train {")
    assert '"Relu (op#9)\\nfc3"' in dot  # --append_output
    assert "#0\"" not in dot  # minimal: no blob nodes


def test_cli_plan_draws_each_net(tmp_path):
    plan = core.Plan("myplan")
    a, b = core.Net("first"), core.Net("second/net")
    a.Relu(["x"], "y")
    b.Sigmoid(["y"], "z")
    plan.AddStep(core.execution_step("s", [a, b]))
    for name, data in [("p.pbtxt", text_format.MessageToString(plan.Proto()).encode()),
                       ("p.pb", plan.Proto().SerializeToString())]:
        src = tmp_path / name
        src.write_bytes(data)
        prefix = str(tmp_path / name) + "_"
        assert net_drawer.main(["--input", str(src), "--output_prefix", prefix,
                                "--format", "dot"]) == 0
        with open(prefix + "myplanfirst.dot") as f:
            assert '"Relu (op#0)"' in f.read()
        with open(prefix + "myplansecond_net.dot") as f:  # "/" is not a path separator here
            assert '"Sigmoid (op#0)"' in f.read()


def test_cli_bad_inputs_give_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        net_drawer.main(["--input", str(tmp_path / "missing.pb")])
    assert e.value.code == 2
    assert "missing.pb does not exist" in capsys.readouterr().err
    with open(os.path.join(CAFFE2_FIXTURES, "README.md"), "rb") as f:
        readme = f.read()
    for name, data in [("readme.pbtxt", readme),
                       ("garbage.pb", bytes(range(256)) * 4),
                       ("empty.pb", b"")]:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(SystemExit) as e:
            net_drawer.main(["--input", str(path), "--output_prefix", str(tmp_path) + os.sep])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert name in err and ("neither a NetDef nor a PlanDef" in err or "empty" in err), err
    assert sorted(os.listdir(tmp_path)) == ["empty.pb", "garbage.pb", "readme.pbtxt"]
    with pytest.raises(SystemExit) as e:
        net_drawer.main(["--input", os.path.join(CAFFE2_FIXTURES, "mnist_deploy_net.pbtxt"),
                         "--format", "gif"])
    assert e.value.code == 2
    with pytest.raises(ValueError, match="neither a NetDef nor a PlanDef"):
        net_drawer.LoadGraphs(str(tmp_path / "garbage.pb"))


def test_cli_as_a_module(tmp_path):
    src = os.path.join(REPO, "tests", "fixtures", "mlp_net.pbtxt")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "halfcaf.net_drawer", "--input", src,
                          "--output_prefix", str(tmp_path) + os.sep, "--format", "svg"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    root = ET.parse(str(tmp_path / "mlp.svg")).getroot()
    assert "fc2/FC (op#2)" in [t.text for t in root.iter(SVG + "text")]
    bad = subprocess.run([sys.executable, "-m", "halfcaf.net_drawer", "--input",
                          str(tmp_path / "mlp.svg")], env=env, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "neither a NetDef nor a PlanDef" in bad.stderr
