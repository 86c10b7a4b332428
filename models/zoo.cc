#include "models/zoo.h"

#include <string>
#include <vector>

#include "core/enforce.h"

namespace halfcaf {

namespace {

void AddHead(ModelHelper* m, const std::string& logits) {
  m->SoftmaxWithLoss(logits, kZooLabel, kZooSoftmax, kZooLoss);
  m->Accuracy(kZooSoftmax, kZooLabel, kZooAccuracy);
  m->AddOutput(kZooSoftmax);
  m->AddOutput(kZooLoss);
  m->AddOutput(kZooAccuracy);
}

void AddInputs(ModelHelper* m) {
  m->AddInput(kZooData);
  m->AddInput(kZooLabel);
}

// Conv (no bias, MSRA) + SpatialBN [+ Relu in place]; returns the BN output.
std::string ConvBN(ModelHelper* m, const std::string& in, const std::string& conv,
                   const std::string& bn, int64_t dim_in, int64_t dim_out, int kernel, int stride,
                   int pad, bool relu) {
  ConvOptions opts;
  opts.stride = stride;
  opts.pad = pad;
  opts.no_bias = true;
  opts.weight_init = Filler::MSRA();
  m->Conv(in, conv, dim_in, dim_out, kernel, opts);
  m->SpatialBN(conv, bn, dim_out);
  if (relu) m->Relu(bn, bn);
  return bn;
}

// One residual block; returns its output blob (after the final Relu).
std::string ResidualBlock(ModelHelper* m, const std::string& in, const std::string& prefix,
                          int64_t dim_in, int64_t dim_mid, int64_t dim_out, int stride,
                          bool bottleneck) {
  std::string branch;
  if (bottleneck) {
    branch = ConvBN(m, in, prefix + "_branch2a", prefix + "_branch2a_bn", dim_in, dim_mid, 1, 1, 0,
                    true);
    branch = ConvBN(m, branch, prefix + "_branch2b", prefix + "_branch2b_bn", dim_mid, dim_mid, 3,
                    stride, 1, true);
    branch = ConvBN(m, branch, prefix + "_branch2c", prefix + "_branch2c_bn", dim_mid, dim_out, 1,
                    1, 0, false);
  } else {
    branch = ConvBN(m, in, prefix + "_branch2a", prefix + "_branch2a_bn", dim_in, dim_out, 3,
                    stride, 1, true);
    branch = ConvBN(m, branch, prefix + "_branch2b", prefix + "_branch2b_bn", dim_out, dim_out, 3,
                    1, 1, false);
  }
  std::string shortcut = in;
  if (dim_in != dim_out || stride != 1) {
    shortcut = ConvBN(m, in, prefix + "_branch1", prefix + "_branch1_bn", dim_in, dim_out, 1,
                      stride, 0, false);
  }
  const std::string sum = m->Add(branch, shortcut, prefix + "_sum");
  return m->Relu(sum, sum);
}

}  // namespace

void BuildLeNet(ModelHelper* m, int num_classes, int image_channels, int image_size) {
  HALFCAF_ENFORCE(m != nullptr, "BuildLeNet: null ModelHelper");
  HALFCAF_ENFORCE(num_classes > 0, "BuildLeNet: num_classes must be > 0, got ", num_classes);
  HALFCAF_ENFORCE(image_channels > 0, "BuildLeNet: image_channels must be > 0, got ",
                  image_channels);
  HALFCAF_ENFORCE(image_size >= 16, "BuildLeNet: image_size must be >= 16, got ", image_size);
  const int s = ((image_size - 4) / 2 - 4) / 2;  // spatial size after pool2
  AddInputs(m);
  m->Conv(kZooData, "conv1", image_channels, 20, 5);
  m->MaxPool("conv1", "pool1", 2, 2);
  m->Conv("pool1", "conv2", 20, 50, 5);
  m->MaxPool("conv2", "pool2", 2, 2);
  m->FC("pool2", "fc3", 50 * s * s, 500);
  m->Relu("fc3", "fc3");
  m->FC("fc3", "pred", 500, num_classes);
  AddHead(m, "pred");
}

void BuildResNet(ModelHelper* m, int depth, int num_classes, int image_size) {
  HALFCAF_ENFORCE(m != nullptr, "BuildResNet: null ModelHelper");
  HALFCAF_ENFORCE(depth == 18 || depth == 50, "BuildResNet: depth must be 18 or 50, got ", depth);
  HALFCAF_ENFORCE(num_classes > 0, "BuildResNet: num_classes must be > 0, got ", num_classes);
  HALFCAF_ENFORCE(image_size > 0, "BuildResNet: image_size must be > 0, got ", image_size);
  const bool bottleneck = depth == 50;
  const std::vector<int> blocks =
      bottleneck ? std::vector<int>{3, 4, 6, 3} : std::vector<int>{2, 2, 2, 2};
  const int expansion = bottleneck ? 4 : 1;

  AddInputs(m);
  std::string blob = ConvBN(m, kZooData, "conv1", "res_conv1_bn", 3, 64, 7, 2, 3, true);
  blob = m->MaxPool(blob, "pool1", 3, 2, 1);
  int64_t dim_in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t dim_mid = int64_t{64} << stage;
    const int64_t dim_out = dim_mid * expansion;
    for (int b = 0; b < blocks[stage]; ++b) {
      const int stride = (stage > 0 && b == 0) ? 2 : 1;
      const std::string prefix = "res" + std::to_string(stage + 2) + "_" + std::to_string(b);
      blob = ResidualBlock(m, blob, prefix, dim_in, dim_mid, dim_out, stride, bottleneck);
      dim_in = dim_out;
    }
  }
  blob = m->GlobalAveragePool(blob, "pool5");
  blob = m->FC(blob, "pred", dim_in, num_classes);
  AddHead(m, blob);
}

}  // namespace halfcaf
