#!/usr/bin/env python3
"""Exports a torchvision ResNet-50 / ResNet-18 (random, seeded initialisation; eval mode) for
halfcaf's numerics test.

Writes one binary TensorProtos file (halfcaf / Caffe2 proto, encoded here by hand: no generated
Python module is needed) holding
  - every parameter under halfcaf's model-zoo name (models/zoo.cc): conv1_w, res_conv1_bn_{s,b,rm,
    riv}, res{stage}_{block}_branch2{a,b,c}_w, ..._branch2{a,b,c}_bn_{s,b,rm,riv},
    res{stage}_{block}_branch1_w / _branch1_bn_* (projection shortcuts), pred_w, pred_b. BN
    running mean and variance are included (`_riv` holds the variance, as in halfcaf);
  - `data`: a fixed random input (NCHW, or NHWC with --order NHWC);
  - `expected_pred` (logits) and `expected_softmax`: PyTorch's FP32 eval-mode outputs for it.
BN scale, bias and running statistics are randomised (seeded) so that a mix-up of any of them
shows; the classifier is scaled so that the logits have a standard deviation of about 2 (a
spread-out softmax). With --order NHWC, conv weights are written as halfcaf's NHWC filters (M, kH, kW, C).
"""
import argparse

import torch
import torchvision


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire_type, payload):
    return varint((number << 3) | wire_type) + payload


def length_delimited(number, data):
    return field(number, 2, varint(len(data)) + data)


def tensor_proto(name, t):
    """TensorProto: dims = 1 (packed int64), data_type = 2 (FLOAT = 1), name = 7, raw_data = 13."""
    t = t.detach().to(torch.float32).contiguous().cpu()
    dims = b"".join(varint(d) for d in t.shape)
    msg = b""
    if t.dim() > 0:
        msg += length_delimited(1, dims)
    msg += field(2, 0, varint(1))
    msg += length_delimited(7, name.encode())
    msg += length_delimited(13, t.numpy().astype("<f4").tobytes())
    return msg


def zoo_name(tv_name):
    """torchvision parameter name -> halfcaf zoo blob name (None: not exported)."""
    parts = tv_name.split(".")
    suffix = {"weight": "s", "bias": "b", "running_mean": "rm", "running_var": "riv"}
    if parts[-1] == "num_batches_tracked":
        return None
    if parts[0] == "conv1":
        return "conv1_w"
    if parts[0] == "bn1":
        return "res_conv1_bn_" + suffix[parts[-1]]
    if parts[0] == "fc":
        return "pred_" + ("w" if parts[1] == "weight" else "b")
    if parts[0].startswith("layer"):
        stage = int(parts[0][len("layer"):]) + 1
        prefix = "res%d_%s" % (stage, parts[1])
        if parts[2] == "downsample":
            branch = prefix + "_branch1"
            return branch + "_w" if parts[3] == "0" else branch + "_bn_" + suffix[parts[4]]
        letter = "abc"[int(parts[2][-1]) - 1]
        branch = prefix + "_branch2" + letter
        return branch + "_w" if parts[2].startswith("conv") else branch + "_bn_" + suffix[parts[3]]
    raise ValueError("unexpected torchvision parameter " + tv_name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=50, choices=[18, 50])
    ap.add_argument("--image_size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--num_classes", type=int, default=1000)
    ap.add_argument("--order", default="NCHW", choices=["NCHW", "NHWC"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True, help="TensorProtos file to write")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = getattr(torchvision.models, "resnet%d" % args.depth)(num_classes=args.num_classes)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
        model.fc.bias.normal_(0.0, 0.1)
    model.eval()
    x = torch.randn(args.batch, 3, args.image_size, args.image_size)
    with torch.no_grad():
        # Scale the classifier so that the logits have a standard deviation of about 2: the
        # softmax is then spread out rather than one-hot, and comparing it means something.
        spread = model(x).std().item()
        model.fc.weight.mul_(2.0 / spread)
        model.fc.bias.mul_(2.0 / spread)
        logits = model(x)
        softmax = torch.softmax(logits, dim=1)

    out = b""
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        zn = zoo_name(name)
        if zn is None:
            continue
        if args.order == "NHWC" and t.dim() == 4:
            t = t.permute(0, 2, 3, 1)
        out += length_delimited(1, tensor_proto(zn, t))
    data = x.permute(0, 2, 3, 1) if args.order == "NHWC" else x
    out += length_delimited(1, tensor_proto("data", data))
    out += length_delimited(1, tensor_proto("expected_pred", logits))
    out += length_delimited(1, tensor_proto("expected_softmax", softmax))
    with open(args.out, "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
