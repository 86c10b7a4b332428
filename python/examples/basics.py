"""Caffe2's "Basics" tutorial (workspaces, operators, nets) with only the imports changed."""
import time

import numpy as np

from halfcaf import core, model_helper, net_drawer, workspace


def main(verbose=True):
    say = print if verbose else (lambda *a, **k: None)
    # Workspaces.
    workspace.ResetWorkspace()
    say("Current blobs in the workspace: {}".format(workspace.Blobs()))
    say("Workspace has blob 'X'? {}".format(workspace.HasBlob("X")))
    X = np.random.randn(2, 3).astype(np.float32)
    say("Generated X from numpy:\n{}".format(X))
    workspace.FeedBlob("X", X)
    say("Current blobs in the workspace: {}".format(workspace.Blobs()))
    say("Workspace has blob 'X'? {}".format(workspace.HasBlob("X")))
    say("Fetched X:\n{}".format(workspace.FetchBlob("X")))
    np.testing.assert_array_equal(X, workspace.FetchBlob("X"))
    say("Current workspace: {}".format(workspace.CurrentWorkspace()))
    workspace.SwitchWorkspace("gutentag", True)
    say("Current workspace: {}".format(workspace.CurrentWorkspace()))
    say("Current blobs in the workspace: {}".format(workspace.Blobs()))
    workspace.SwitchWorkspace("default")
    workspace.ResetWorkspace()
    say("Current blobs in the workspace after reset: {}".format(workspace.Blobs()))

    # Operators.
    op = core.CreateOperator("Relu", ["X"], ["Y"])
    say("Type of the created op is: {}".format(type(op)))
    say("Content:\n{}".format(str(op)))
    workspace.FeedBlob("X", np.random.randn(2, 3).astype(np.float32))
    workspace.RunOperatorOnce(op)
    say("X:\n{}\n".format(workspace.FetchBlob("X")))
    say("Y:\n{}\n".format(workspace.FetchBlob("Y")))
    say("Expected:\n{}\n".format(np.maximum(workspace.FetchBlob("X"), 0)))
    np.testing.assert_array_equal(workspace.FetchBlob("Y"), np.maximum(workspace.FetchBlob("X"), 0))
    op = core.CreateOperator("GaussianFill", [], ["Z"], shape=[100, 100], mean=1.0, std=1.0)
    workspace.RunOperatorOnce(op)
    temp = workspace.FetchBlob("Z")
    say("Z: mean {:.3f}, std {:.3f} (want about 1 and 1)".format(temp.mean(), temp.std()))

    # Nets.
    net = core.Net("my_first_net")
    X = net.GaussianFill([], ["X"], mean=0.0, std=1.0, shape=[2, 3], run_once=0)
    W = net.GaussianFill([], ["W"], mean=0.0, std=1.0, shape=[5, 3], run_once=0)
    b = net.ConstantFill([], ["b"], shape=[5, ], value=1.0, run_once=0)
    Y = X.FC([W, b], ["Y"])
    say("Current network proto:\n\n{}".format(net.Proto()))
    graph = net_drawer.GetPydotGraph(net, rankdir="LR")
    say("The net drawn: {} bytes of SVG".format(len(graph.create_svg())))
    workspace.ResetWorkspace()
    workspace.RunNetOnce(net)
    say("Blobs in the workspace after execution: {}".format(workspace.Blobs()))
    for name in workspace.Blobs():
        say("{}:\n{}".format(name, workspace.FetchBlob(name)))
    workspace.ResetWorkspace()
    workspace.CreateNet(net)
    workspace.RunNet(net.Proto().name)
    start = time.time()
    for _ in range(1000):
        workspace.RunNet(net.Proto().name)
    end = time.time()
    say("Run time per RunNet call: {:.1f} microseconds".format((end - start) * 1000))
    y = workspace.FetchBlob(str(Y))
    np.testing.assert_allclose(
        y, workspace.FetchBlob("X") @ workspace.FetchBlob("W").T + 1.0, rtol=1e-5, atol=1e-5)

    # A model: FC, Sigmoid, SoftmaxWithLoss, run forward then with gradients.
    data = np.random.rand(16, 100).astype(np.float32)
    label = (np.random.rand(16) * 10).astype(np.int32)
    workspace.FeedBlob("data", data)
    workspace.FeedBlob("label", label)
    m = model_helper.ModelHelper(name="my first net")
    m.param_init_net.XavierFill([], 'fc_w', shape=[10, 100])
    m.param_init_net.ConstantFill([], 'fc_b', shape=[10, ])
    fc_1 = m.net.FC(["data", "fc_w", "fc_b"], "fc1")
    pred = m.net.Sigmoid(fc_1, "pred")
    softmax, loss = m.net.SoftmaxWithLoss([pred, "label"], ["softmax", "loss"])
    say(m.net.Proto())
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    for _ in range(100):
        data = np.random.rand(16, 100).astype(np.float32)
        label = (np.random.rand(16) * 10).astype(np.int32)
        workspace.FeedBlob("data", data)
        workspace.FeedBlob("label", label)
        workspace.RunNet(m.name, 10)  # run for 10 times
    say(workspace.FetchBlob("softmax"))
    say(workspace.FetchBlob("loss"))
    m.AddGradientOperators([loss])
    workspace.CreateNet(m.net, overwrite=True)
    workspace.RunNet(m.name, 10)
    say(m.net.Proto())
    assert workspace.HasBlob("fc_w_grad")
    return workspace.FetchBlob("loss")


if __name__ == "__main__":
    main()
