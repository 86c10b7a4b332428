// Model zoo: classic image classifiers built with ModelHelper, as forward (training) nets plus
// init nets. Every model reads `data` (float; NCHW (N, C, H, W) or NHWC (N, H, W, C) by the
// helper's order) and `label` (int32, (N)), and writes `softmax` (N, num_classes), `loss` (0-d,
// mean cross entropy) and `accuracy` (0-d, top-1). The storage order and the test mode come from
// the helper.
#pragma once

#include <cstdint>

#include "models/model_helper.h"

namespace halfcaf {

constexpr const char* kZooData = "data";
constexpr const char* kZooLabel = "label";
constexpr const char* kZooSoftmax = "softmax";
constexpr const char* kZooLoss = "loss";
constexpr const char* kZooAccuracy = "accuracy";

// LeNet as in Caffe2's MNIST tutorial, on (image_channels, image_size, image_size) inputs
// (MNIST: 1x28x28): conv1 5x5 20 -> pool1 2x2/2 -> conv2 5x5 50 -> pool2 2x2/2 -> fc3 500 ->
// Relu -> pred num_classes -> SoftmaxWithLoss + Accuracy. XavierFill weights, zero biases.
// Throws if image_size leaves no room for the two conv/pool stages (image_size < 16).
void BuildLeNet(ModelHelper* model, int num_classes = 10, int image_channels = 1,
                int image_size = 28);

// ResNet v1.5 for (3, image_size, image_size) inputs. depth 18: basic blocks [2, 2, 2, 2];
// depth 50: bottleneck blocks [3, 4, 6, 3] with the stride in the 3x3 conv. Stem: conv1 7x7/2
// (64) -> BN -> Relu -> pool1 3x3/2 pad 1. Every conv has no bias, MSRA init, and is followed by
// SpatialBN; a block's shortcut is a 1x1 projection conv + BN when its shape changes. Then
// global average pooling (pool5), FC `pred` (num_classes) and SoftmaxWithLoss + Accuracy.
// Layer names follow Detectron: res{stage}_{block}_branch2{a,b,c}[_bn], res{stage}_{block}_
// branch1[_bn] (projection), res{stage}_{block}_sum; stages 2..5.
// `image_size` is only checked (> 0): every window keeps at least one pixel and the final
// pooling is global, so any input size builds a valid net. Throws on another depth.
void BuildResNet(ModelHelper* model, int depth, int num_classes = 1000, int image_size = 224);

}  // namespace halfcaf
