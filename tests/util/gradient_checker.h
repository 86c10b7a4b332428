// Finite-difference gradient checker (Caffe style), used by every differentiable operator's test.
//
// For a forward op, forward output k and input i it defines loss = sum_j w_j * Y_k[j] with fixed
// random weights w, builds the gradient ops from the registered gradient maker (dY_k = w, zero
// gradients for the other float outputs; the maker is given the inputs' dims), runs them, and
// compares dX_i with central differences (loss(x + h) - loss(x - h)) / 2h element by element.
// Elements within `kink_range` of `kink` (e.g. Relu at 0) are skipped, as are elements where the
// forward function is not smooth.
#pragma once

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/gradient.h"
#include "core/operator.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

struct GradientCheckOptions {
  float stepsize = 1e-2f;
  float threshold = 1e-2f;   // relative, scale max(|analytic|, |numeric|, 1)
  float kink = 0.f;
  float kink_range = -1.f;   // < 0: no kink
  int max_elements = 400;    // check at most this many elements of the input (evenly strided)
  uint32_t seed = 1701;
};

class GradientChecker {
 public:
  explicit GradientChecker(GradientCheckOptions opts = {}) : opts_(opts) {}

  // Checks d loss(Y_output) / d X_input for `def` with the given inputs.
  void Check(const OperatorDef& def, const std::map<std::string, Tensor>& inputs, int input,
             int output) {
    SCOPED_TRACE(def.type() + " d(output " + std::to_string(output) + ")/d(input " +
                 std::to_string(input) + " '" + def.input(input) + "')");
    // Forward once for output shapes.
    Workspace ws;
    RunOp(def, inputs, &ws);
    const Tensor& y = ws.GetTensor(def.output(output));
    ASSERT_EQ(y.dtype(), DataType::FLOAT) << "checked output must be float";
    Tensor w = RandomTensor(y.dims(), opts_.seed + 17, -1.f, 1.f);

    // Analytic gradient.
    std::vector<GradientWrapper> g_out(def.output_size());
    for (int o = 0; o < def.output_size(); ++o) {
      const Blob* b = ws.GetBlob(def.output(o));
      if (!b->IsTensor() || b->GetTensor().dtype() != DataType::FLOAT) continue;
      // Outputs that alias an input (in-place) carry the checked gradient only if checked.
      g_out[o].dense = def.output(o) + "_grad";
      Tensor* g = ws.CreateTensor(g_out[o].dense);
      if (o == output) {
        g->CopyFrom(w);
      } else {
        g->Resize(b->GetTensor().dims());
        std::fill_n(g->mutable_data<float>(), g->numel(), 0.f);
      }
    }
    // The makers see the inputs' dims (Add & co. choose their NumPy-broadcast gradient by them).
    std::vector<std::vector<int64_t>> in_dims;
    for (const auto& name : def.input()) {
      auto it = inputs.find(name);
      if (it != inputs.end()) in_dims.push_back(it->second.dims());
    }
    GradientOpsMeta meta = GetGradientForOp(
        def, g_out, static_cast<int>(in_dims.size()) == def.input_size() ? &in_dims : nullptr);
    ASSERT_LT(input, static_cast<int>(meta.g_input.size()));
    ASSERT_TRUE(meta.g_input[input].IsDense())
        << "no dense gradient for input " << input << " ('" << def.input(input) << "')";
    // Restore forward inputs (in-place forward ops overwrote them) before the gradient ops.
    for (const auto& kv : inputs) SetInput(&ws, kv.first, kv.second);
    RunOp(def, {}, &ws);
    for (const auto& gop : meta.ops) {
      auto op = CreateOperator(gop, &ws);
      op->Run(0);
    }
    std::vector<float> analytic = ToFloatVector(ws.GetTensor(meta.g_input[input].dense));
    const Tensor& x = inputs.at(def.input(input));
    ASSERT_EQ(static_cast<int64_t>(analytic.size()), x.numel()) << "gradient shape mismatch";

    // Numeric gradient.
    const int64_t n = x.numel();
    const int64_t stride = std::max<int64_t>(1, n / opts_.max_elements);
    for (int64_t j = 0; j < n; j += stride) {
      float xj = x.data<float>()[j];
      if (opts_.kink_range >= 0 && std::fabs(xj - opts_.kink) < opts_.kink_range) continue;
      double lp = Loss(def, inputs, input, j, xj + opts_.stepsize, output, w);
      double lm = Loss(def, inputs, input, j, xj - opts_.stepsize, output, w);
      double numeric = (lp - lm) / (2.0 * opts_.stepsize);
      double a = analytic[j];
      double scale = std::max({std::fabs(a), std::fabs(numeric), 1.0});
      ASSERT_LE(std::fabs(a - numeric), opts_.threshold * scale)
          << "element " << j << ": analytic " << a << " vs numeric " << numeric;
    }
  }

 private:
  double Loss(const OperatorDef& def, const std::map<std::string, Tensor>& inputs, int input,
              int64_t j, float value, int output, const Tensor& w) {
    std::map<std::string, Tensor> in;
    for (const auto& kv : inputs) in[kv.first].CopyFrom(kv.second);
    in[def.input(input)].mutable_data<float>()[j] = value;
    Workspace ws;
    RunOp(def, in, &ws);
    const Tensor& y = ws.GetTensor(def.output(output));
    const float* yd = y.data<float>();
    const float* wd = w.data<float>();
    double loss = 0;
    for (int64_t i = 0; i < y.numel(); ++i) loss += static_cast<double>(yd[i]) * wd[i];
    return loss;
  }

  GradientCheckOptions opts_;
};

}  // namespace testing
}  // namespace halfcaf
