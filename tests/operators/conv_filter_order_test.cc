// Conv / ConvGradient with filter_order (halfcaf's argument): an NHWC convolution reading its
// filter in NCHW, (M, C/group, kH, kW), gives what it gives with the same filter transposed to
// NHWC, bit for bit, on the default engine and on DNNL, in float and bfloat16; its dfilter is that
// dfilter transposed back. And the arguments it refuses.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/workspace.h"
#include "operators/tensor/transpose_op.h"
#include "tests/util/conv_case.h"
#include "tests/util/error_of.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct Case {
  ConvShape s;
  const char* what;
};

std::vector<Case> Cases() {
  std::vector<Case> out;
  ConvShape a{2, 16, 9, 7, 32, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  out.push_back({a, "3x3 pad 1"});
  ConvShape b{2, 32, 8, 8, 16, 1, 1};
  b.bias = false;
  out.push_back({b, "1x1 no bias"});
  ConvShape c{1, 8, 11, 10, 12, 3, 2};
  c.sh = 2;
  c.pb = 1;
  c.group = 2;
  out.push_back({c, "3x2 stride 2 group 2"});
  for (auto& k : out) k.s.nhwc = true;
  return out;
}

std::vector<Argument> Args(const ConvShape& s, bool filter_nchw) {
  std::vector<Argument> args = {MakeArgument("kernels", std::vector<int64_t>{s.kh, s.kw}),
                                MakeArgument("strides", std::vector<int64_t>{s.sh, s.sw}),
                                MakeArgument("pads", std::vector<int64_t>{s.pt, s.pl, s.pb, s.pr}),
                                MakeArgument("group", static_cast<int>(s.group)),
                                MakeArgument("order", std::string("NHWC"))};
  if (filter_nchw) args.push_back(MakeArgument("filter_order", std::string("NCHW")));
  return args;
}

// (M, kH, kW, Cg) <-> (M, Cg, kH, kW).
Tensor SwitchOrder(const Tensor& t, bool to_nhwc) {
  const std::vector<int> axes = OrderSwitchAxes(4, to_nhwc);
  Tensor out(TransposeDims(t.dims(), axes), t.dtype());
  TransposeBytes(t.dims(), axes, DataTypeSize(t.dtype()), t.raw_data(),
                 out.raw_mutable_data(t.dtype()));
  return out;
}

void ExpectSameBits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0) << what;
}

void RunWith(const std::string& engine, const OperatorDef& def, Workspace* ws) {
  const OperatorCreator* creator = OperatorRegistry::Find(DeviceType::CPU, def.type(), engine);
  ASSERT_NE(creator, nullptr) << def.type() << " " << engine;
  (*creator)(def, ws)->Run(0);
}

// Whether the DNNL engine takes a bfloat16 convolution on this CPU (BF16 instructions, not capped
// away by ONEDNN_MAX_CPU_ISA): it declines at creation otherwise.
bool DnnlTakesBFloat16() {
  Workspace ws;
  ConvShape s{1, 4, 5, 5, 4, 3, 3};
  s.nhwc = true;
  SetInput(&ws, "X", ToBFloat16(RandomTensor(s.XDims(), 1)));
  SetInput(&ws, "W", ToBFloat16(RandomTensor(s.WDims(), 2)));
  try {
    RunWith("DNNL", MakeOperatorDef("Conv", "", {"X", "W"}, {"Y"}, Args(s, false)), &ws);
    return true;
  } catch (const UnsupportedOperatorFeature&) {
    return false;
  }
}

TEST(ConvFilterOrderTest, NchwFilterOfAnNhwcConvolutionIsTheTransposedFilterBitForBit) {
  std::vector<std::string> engines = {""};
  if (OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL")) engines.push_back("DNNL");
  for (const DataType dtype : {DataType::FLOAT, DataType::BFLOAT16}) {
    for (const std::string& engine : engines) {
      for (const Case& c : Cases()) {
        const ConvShape& s = c.s;
        SCOPED_TRACE(std::string(c.what) + " engine '" + engine + "' " + DataTypeName(dtype));
        if (!engine.empty() && dtype == DataType::BFLOAT16 && !DnnlTakesBFloat16()) continue;
        Workspace ws;
        auto typed = [&](const Tensor& t) {
          return dtype == DataType::FLOAT ? t : ToFloat16Type(t, dtype);
        };
        const Tensor w_nhwc = typed(RandomTensor(s.WDims(), 2));
        SetInput(&ws, "X", typed(RandomTensor(s.XDims(), 1)));
        SetInput(&ws, "W", w_nhwc);
        SetInput(&ws, "Wc", SwitchOrder(w_nhwc, false));
        SetInput(&ws, "b", RandomTensor({s.M}, 3));
        SetInput(&ws, "dY", typed(RandomTensor(s.YDims(), 4)));
        std::vector<std::string> in = {"X", "W"}, in_c = {"X", "Wc"};
        if (s.bias) {
          in.push_back("b");
          in_c.push_back("b");
        }
        RunWith(engine, MakeOperatorDef("Conv", "", in, {"Y"}, Args(s, false)), &ws);
        RunWith(engine, MakeOperatorDef("Conv", "", in_c, {"Yc"}, Args(s, true)), &ws);
        ExpectSameBits(ws.GetTensor("Yc"), ws.GetTensor("Y"), "Y");

        std::vector<Argument> g = Args(s, false), gc = Args(s, true);
        if (!s.bias) {
          g.push_back(MakeArgument("no_bias", 1));
          gc.push_back(MakeArgument("no_bias", 1));
        }
        std::vector<std::string> out = {"dW"}, out_c = {"dWc"};
        if (s.bias) {
          out.push_back("db");
          out_c.push_back("dbc");
        }
        out.push_back("dX");
        out_c.push_back("dXc");
        RunWith(engine, MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, out, g), &ws);
        RunWith(engine, MakeOperatorDef("ConvGradient", "", {"X", "Wc", "dY"}, out_c, gc), &ws);
        ExpectSameBits(ws.GetTensor("dXc"), ws.GetTensor("dX"), "dX");
        if (s.bias) ExpectSameBits(ws.GetTensor("dbc"), ws.GetTensor("db"), "db");
        ASSERT_EQ(ws.GetTensor("dWc").dims(), ws.GetTensor("Wc").dims());
        ExpectSameBits(ws.GetTensor("dWc"), SwitchOrder(ws.GetTensor("dW"), false), "dW");
      }
    }
  }
}

TEST(ConvFilterOrderTest, WhatItRefuses) {
  Workspace ws;
  ConvShape s{1, 4, 5, 5, 6, 3, 3};
  s.nhwc = true;
  SetInput(&ws, "X", RandomTensor(s.XDims(), 1));
  SetInput(&ws, "W", RandomTensor(s.WDims(), 2));  // NHWC-shaped, read as NCHW: C mismatch
  auto error = [&](const OperatorDef& def) {
    return ErrorOf([&] { CreateOperator(def, &ws)->Run(0); });
  };
  EXPECT_NE(error(MakeOperatorDef("Conv", "", {"X", "W"}, {"Y"}, Args(s, true)))
                .find("[6, 3, 3, 4] (M, C/group, kH, kW) has 3 input channels per group"),
            std::string::npos);
  EXPECT_NE(error(MakeOperatorDef("MaxPool", "", {"X"}, {"Y"},
                                  {MakeArgument("kernel", 2),
                                   MakeArgument("filter_order", std::string("NCHW"))}))
                .find("filter_order applies to convolutions only"),
            std::string::npos);
  EXPECT_NE(error(MakeOperatorDef("Conv", "", {"X", "W"}, {"Y"},
                                  {MakeArgument("kernels", std::vector<int64_t>{3, 3, 3}),
                                   MakeArgument("filter_order", std::string("NHWC"))}))
                .find("needs a 2-D convolution"),
            std::string::npos);
  EXPECT_NE(error(MakeOperatorDef("Conv", "", {"X", "W"}, {"Y"},
                                  {MakeArgument("kernel", 3),
                                   MakeArgument("filter_order", std::string("NCWH"))}))
                .find("NCWH"),
            std::string::npos);
  EXPECT_NE(
      error(MakeOperatorDef("ConvTranspose", "", {"X", "W"}, {"Y"},
                            {MakeArgument("kernel", 3), MakeArgument("order", std::string("NHWC")),
                             MakeArgument("filter_order", std::string("NCHW"))}))
          .find("filter_order does not apply to ConvTranspose"),
      std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
