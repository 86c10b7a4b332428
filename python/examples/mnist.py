"""Caffe2's "MNIST" tutorial with the imports changed, on Fashion-MNIST (Debian's
dataset-fashion-mnist): LMDBs made by make_mnist_db, a LeNet built with brew and ModelHelper,
TensorProtosDBInput, build_sgd, accuracy and loss printed while training, then the test set's
accuracy from a test model sharing the trained parameters, and a deploy net. The tutorial ran
200 iterations of MNIST with the rate decayed by 0.999 per iteration; Fashion-MNIST is harder, so
the defaults here train 4000 iterations at 0.9995 (about 0.89 on the test set).

    python examples/mnist.py [--iters 4000] [--gamma 0.9995] [--data_folder DIR] [--min_accuracy 0.88]
"""
import argparse
import os
import subprocess
import sys

import numpy as np

from halfcaf import brew, core, model_helper, optimizer, workspace

FASHION = "/usr/share/datasets/fashion-mnist"


def make_db(data_folder, tool):
    """mnist-train-nchw-lmdb and mnist-test-nchw-lmdb from the idx files."""
    os.makedirs(data_folder, exist_ok=True)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        db = os.path.join(data_folder, "mnist-%s-nchw-lmdb" % split)
        if os.path.exists(os.path.join(db, "data.mdb")):
            continue
        subprocess.check_call([
            tool, "--image_file", os.path.join(FASHION, prefix + "-images-idx3-ubyte.gz"),
            "--label_file", os.path.join(FASHION, prefix + "-labels-idx1-ubyte.gz"),
            "--output_file", db, "--db", "lmdb", "--channel_first"])


def AddInput(model, batch_size, db, db_type):
    # load the data
    data_uint8, label = model.TensorProtosDBInput(
        [], ["data_uint8", "label"], batch_size=batch_size, db=db, db_type=db_type)
    # cast the data to float
    data = model.Cast(data_uint8, "data", to=core.DataType.FLOAT)
    # scale data from [0,255] down to [0,1]
    data = model.Scale(data, data, scale=float(1. / 256))
    # don't need the gradient for the backward pass
    data = model.StopGradient(data, data)
    return data, label


def AddLeNetModel(model, data):
    conv1 = brew.conv(model, data, 'conv1', dim_in=1, dim_out=20, kernel=5)
    pool1 = brew.max_pool(model, conv1, 'pool1', kernel=2, stride=2)
    conv2 = brew.conv(model, pool1, 'conv2', dim_in=20, dim_out=50, kernel=5)
    pool2 = brew.max_pool(model, conv2, 'pool2', kernel=2, stride=2)
    fc3 = brew.fc(model, pool2, 'fc3', dim_in=50 * 4 * 4, dim_out=500)
    relu3 = brew.relu(model, fc3, 'relu3')
    pred = brew.fc(model, relu3, 'pred', dim_in=500, dim_out=10)
    softmax = brew.softmax(model, pred, 'softmax')
    return softmax


def AddAccuracy(model, softmax, label):
    accuracy = brew.accuracy(model, [softmax, label], "accuracy")
    return accuracy


def AddTrainingOperators(model, softmax, label, gamma=0.999):
    xent = model.LabelCrossEntropy([softmax, label], 'xent')
    loss = model.AveragedLoss(xent, "loss")
    AddAccuracy(model, softmax, label)
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=0.1, policy="step", stepsize=1, gamma=gamma)


def AddBookkeepingOperators(model):
    model.Print('accuracy', [], to_file=1)
    model.Print('loss', [], to_file=1)
    for param in model.params:
        model.Summarize(param, [], to_file=1)
        model.Summarize(model.param_to_grad[param], [], to_file=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=4000)
    ap.add_argument("--data_folder", default=os.path.join("runs", "mnist_tutorial"))
    ap.add_argument("--make_mnist_db", default=os.path.join(
        os.environ.get("HALFCAF_BUILD_DIR", "build"), "bin", "make_mnist_db"))
    ap.add_argument("--gamma", type=float, default=0.9995,
                    help="the rate's decay per iteration (the tutorial's 0.999 suits 200 "
                         "iterations of MNIST; Fashion-MNIST wants a longer run)")
    ap.add_argument("--min_accuracy", type=float, default=0.0,
                    help="exit with status 1 when the test accuracy is below this")
    args = ap.parse_args(argv)
    make_db(args.data_folder, args.make_mnist_db)
    root_folder = os.path.join(args.data_folder, "files")
    os.makedirs(root_folder, exist_ok=True)
    workspace.ResetWorkspace(root_folder)

    arg_scope = {"order": "NCHW"}
    train_model = model_helper.ModelHelper(name="mnist_train", arg_scope=arg_scope)
    data, label = AddInput(train_model, batch_size=64,
                           db=os.path.abspath(os.path.join(args.data_folder, 'mnist-train-nchw-lmdb')),
                           db_type='lmdb')
    softmax = AddLeNetModel(train_model, data)
    AddTrainingOperators(train_model, softmax, label, args.gamma)
    AddBookkeepingOperators(train_model)

    test_model = model_helper.ModelHelper(name="mnist_test", arg_scope=arg_scope, init_params=False)
    data, label = AddInput(test_model, batch_size=100,
                           db=os.path.abspath(os.path.join(args.data_folder, 'mnist-test-nchw-lmdb')),
                           db_type='lmdb')
    softmax = AddLeNetModel(test_model, data)
    AddAccuracy(test_model, softmax, label)

    deploy_model = model_helper.ModelHelper(name="mnist_deploy", arg_scope=arg_scope, init_params=False)
    AddLeNetModel(deploy_model, "data")

    workspace.RunNetOnce(train_model.param_init_net)
    workspace.CreateNet(train_model.net, overwrite=True)
    accuracy = np.zeros(args.iters)
    loss = np.zeros(args.iters)
    for i in range(args.iters):
        workspace.RunNet(train_model.net)
        accuracy[i] = workspace.blobs['accuracy']
        loss[i] = workspace.blobs['loss']
        if (i + 1) % 250 == 0:
            print("iteration %5d: loss %.4f, accuracy %.4f (mean of the last 250)"
                  % (i + 1, loss[i - 249:i + 1].mean(), accuracy[i - 249:i + 1].mean()),
                  flush=True)

    workspace.RunNetOnce(test_model.param_init_net)
    workspace.CreateNet(test_model.net, overwrite=True)
    test_accuracy = np.zeros(100)
    for i in range(100):
        workspace.RunNet(test_model.net.Proto().name)
        test_accuracy[i] = workspace.FetchBlob('accuracy')
    print('test_accuracy: %f' % test_accuracy.mean())

    # The deploy net on one test batch gives the test net's predictions.
    workspace.FeedBlob("data", workspace.FetchBlob("data"))
    workspace.RunNetOnce(deploy_model.net)
    deployed = workspace.FetchBlob("softmax")
    print("deploy net: %d images, %.4f of them right" % (
        len(deployed), (deployed.argmax(1) == workspace.FetchBlob("label")).mean()))
    if test_accuracy.mean() < args.min_accuracy:
        print("test accuracy %.4f is below %.4f" % (test_accuracy.mean(), args.min_accuracy))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
