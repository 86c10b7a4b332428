// halfcaf's zoo ResNet against torchvision's: the same weights (exported by
// tools/peers/export_torchvision_resnet.py under the zoo's names), the same input, eval mode;
// the FP32 logits must agree to 1e-4 relative to their scale, and every softmax probability to
// 1e-4 relative to itself. Skipped when /usr/bin/python3 cannot import torch
// and torchvision (failed under HALFCAF_PEER=1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "core/net.h"
#include "core/tensor_proto.h"
#include "core/workspace.h"
#include "models/mixed_precision.h"
#include "models/model_helper.h"
#include "models/zoo.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/peer.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

// max |got - want| / max |want|: the error relative to the tensor's scale.
double RelativeError(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dims(), want.dims());
  if (got.dims() != want.dims()) return INFINITY;
  double err = 0, scale = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    err =
        std::max(err, std::fabs(static_cast<double>(got.data<float>()[i]) - want.data<float>()[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want.data<float>()[i])));
  }
  return err / std::max(scale, 1e-30);
}

// max over elements of |got - want| / |want| (want > 0 everywhere: a softmax).
double ElementwiseRelativeError(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dims(), want.dims());
  if (got.dims() != want.dims()) return INFINITY;
  double err = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double w = want.data<float>()[i];
    err = std::max(err, std::fabs(got.data<float>()[i] - w) / std::max(std::fabs(w), 1e-30));
  }
  return err;
}

// The FP32 check, and with `bf16_tol` > 0 the same net in BF16 mixed precision (bfloat16 data,
// activations and Conv/FC weight copies, BN and softmax in FP32) against torchvision's FP32 logits
// within bf16_tol relative to their scale.
void CheckAgainstTorchvision(int depth, const std::string& order, int image_size, int batch,
                             double bf16_tol = 0) {
  HALFCAF_REQUIRE_PEER(Peer::kTorchvision);
  const std::string file = TestTempDir() + "/resnet" + std::to_string(depth) + "_" + order + ".pb";
  const std::string cmd = "/usr/bin/python3 " + ::halfcaf::testing::SourceDir() +
                          "/tools/peers/export_torchvision_resnet.py --depth " +
                          std::to_string(depth) + " --order " + order + " --image_size " +
                          std::to_string(image_size) + " --batch " + std::to_string(batch) +
                          " --out " + file;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  ModelHelper model("resnet", order, /*is_test=*/true);
  BuildResNet(&model, depth, 1000, image_size);
  Workspace ws;
  FeedTensorProtosFile(file, &ws);
  // Every zoo parameter comes from torchvision, with the zoo's shape.
  for (const auto& p : model.params()) {
    ASSERT_TRUE(ws.HasBlob(p.name)) << "the export has no '" << p.name << "'";
    EXPECT_EQ(ws.GetTensor(p.name).dims(), p.shape) << p.name;
  }
  Tensor* label = ws.CreateTensor("label");
  label->Resize({batch});
  for (int i = 0; i < batch; ++i) label->mutable_data<int32_t>()[i] = 0;
  ws.RunNetOnce(model.net());

  const double pred_err = RelativeError(ws.GetTensor("pred"), ws.GetTensor("expected_pred"));
  const double softmax_err =
      ElementwiseRelativeError(ws.GetTensor("softmax"), ws.GetTensor("expected_softmax"));
  EXPECT_LT(pred_err, 1e-4) << "logits";
  EXPECT_LT(softmax_err, 1e-4) << "softmax";
  std::cout << "resnet" << depth << " " << order << ": relative error of logits " << pred_err
            << ", of softmax " << softmax_err << std::endl;
  if (bf16_tol <= 0) return;

  std::set<std::string> params;
  for (const auto& p : model.params()) params.insert(p.name);
  const MixedPrecisionResult mp = ToMixedPrecision(model.net(), {}, params, DataType::BFLOAT16);
  NetDef copies;
  for (const auto& p : mp.fp16_params) {
    *copies.add_op() = MakeOperatorDef("FloatToBFloat16", "", {p},
                                       {LowPrecisionCopyName(p, DataType::BFLOAT16)});
  }
  ws.RunNetOnce(copies);
  ws.RunNetOnce(mp.net);
  // pred is bfloat16 now; the transform's cast in front of the softmax is its float copy.
  ASSERT_EQ(ws.GetTensor("pred").dtype(), DataType::BFLOAT16);
  const Tensor& pred16_float = ws.GetTensor("pred_fp32");
  const double bf16_err = RelativeError(pred16_float, ws.GetTensor("expected_pred"));
  EXPECT_LT(bf16_err, bf16_tol) << "bfloat16 logits";
  std::cout << "resnet" << depth << " " << order << " bfloat16: relative error of logits "
            << bf16_err << std::endl;
}

// BF16 (8 significant bits, 2^-9 relative rounding per value) through 50 layers: the logits stay
// within 3% of their scale (measured: 0.75% on oneDNN's BF16 kernels, 0.83% emulated).
TEST(ResNetNumericsTest, ResNet50MatchesTorchvisionNCHW) {
  CheckAgainstTorchvision(50, "NCHW", 64, 2, 3e-2);
}

TEST(ResNetNumericsTest, ResNet18MatchesTorchvisionNHWC) {
  CheckAgainstTorchvision(18, "NHWC", 40, 2);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
