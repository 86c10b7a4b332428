// FC / FCGradient on CUDA (cuBLAS) against the CPU operators, float, float16 and bfloat16; the GEMM
// wrapper's operand swap and precision policy. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "core/math.h"
#include "gpu/cublas_gemm.h"
#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16};

// Host-only: which cuBLAS math each precision gets (the "Pascal" vs "Volta" paths).
TEST(CublasGemmPolicyTest, Fp32IsPedanticFp16UsesTensorOps) {
  EXPECT_EQ(gpu::GemmComputeType(DataType::FLOAT), CUBLAS_COMPUTE_32F_PEDANTIC);
  EXPECT_EQ(gpu::GemmComputeType(DataType::FLOAT16), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(gpu::GemmAlgorithm(DataType::FLOAT16), CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  EXPECT_EQ(gpu::GemmAlgorithm(DataType::FLOAT), CUBLAS_GEMM_DEFAULT);
  EXPECT_EQ(gpu::GemmComputeType(DataType::BFLOAT16), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(gpu::GemmAlgorithm(DataType::BFLOAT16), CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  EXPECT_THROW(gpu::GemmComputeType(DataType::INT32), EnforceNotMet);
}

// gpu::Gemm (row-major, operands swapped for cuBLAS) against math::Gemm for every transpose pair.
TEST(CublasGemmTest, AllTransposesMatchCpu) {
  REQUIRE_GPU();
  using math::Trans;
  const int64_t M = 13, N = 37, K = 29;
  CUDAContext ctx;
  const Device gpu = ctx.device();
  for (Trans ta : {Trans::kNo, Trans::kYes}) {
    for (Trans tb : {Trans::kNo, Trans::kYes}) {
      SCOPED_TRACE(MakeString("trans_a ", ta == Trans::kYes, " trans_b ", tb == Trans::kYes));
      for (DataType dt : kDtypes) {
        SCOPED_TRACE(DataTypeName(dt));
        // Inputs representable in dt, so CPU and GPU see the same values.
        auto rounded = [&](const Tensor& t) {
          return dt == DataType::FLOAT ? t : RoundThrough(t, dt);
        };
        const Tensor A = rounded(RandomTensor(
            ta == Trans::kNo ? std::vector<int64_t>{M, K} : std::vector<int64_t>{K, M}, 1));
        const Tensor B = rounded(RandomTensor(
            tb == Trans::kNo ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K}, 2));
        const Tensor C0 = rounded(RandomTensor({M, N}, 3));
        Tensor want;
        want.CopyFrom(C0);
        math::Gemm(ta, tb, M, N, K, 0.5f, A.data<float>(), B.data<float>(), 2.f,
                   want.mutable_data<float>());
        auto in_dt = [&](const Tensor& t) { return dt == DataType::FLOAT ? t : ToFloat16Type(t, dt); };
        Tensor a(gpu), b(gpu), c(gpu);
        a.CopyFrom(in_dt(A));
        b.CopyFrom(in_dt(B));
        c.CopyFrom(in_dt(C0));
        if (dt == DataType::FLOAT16) {
          gpu::Gemm(&ctx, ta, tb, M, N, K, 0.5f, a.data<Half>(), b.data<Half>(), 2.f,
                    c.mutable_data<Half>());
        } else if (dt == DataType::BFLOAT16) {
          gpu::Gemm(&ctx, ta, tb, M, N, K, 0.5f, a.data<BFloat16>(), b.data<BFloat16>(), 2.f,
                    c.mutable_data<BFloat16>());
        } else {
          gpu::Gemm(&ctx, ta, tb, M, N, K, 0.5f, a.data<float>(), b.data<float>(), 2.f,
                    c.mutable_data<float>());
        }
        ctx.FinishDevice();
        Tensor got;
        got.CopyFrom(c);
        const bool f32 = dt == DataType::FLOAT;
        const float tol = f32 ? 1e-5f : dt == DataType::FLOAT16 ? 2e-3f : 1.6e-2f;
        ExpectNear(ToFloatVector(got), ToFloatVector(want), f32 ? 1e-5f : 8 * tol, tol);
      }
    }
  }
}

// K == 0: C = beta * C, with beta 0 giving zeros even where C held NaN.
TEST(CublasGemmTest, EmptyInnerDimension) {
  REQUIRE_GPU();
  using math::Trans;
  CUDAContext ctx;
  const Device gpu = ctx.device();
  Tensor c0({3, 5}, DataType::FLOAT);
  for (int64_t i = 0; i < c0.numel(); ++i) c0.mutable_data<float>()[i] = i == 7 ? NAN : 1.5f;
  for (float beta : {0.f, 1.f}) {
    SCOPED_TRACE(MakeString("beta ", beta));
    Tensor c(gpu), a(gpu), b(gpu);
    c.CopyFrom(c0);
    a.Resize({3, 0});
    b.Resize({0, 5});
    gpu::Gemm(&ctx, Trans::kNo, Trans::kNo, 3, 5, 0, 1.f, a.mutable_data<float>(),
              b.mutable_data<float>(), beta, c.mutable_data<float>());
    ctx.FinishDevice();
    Tensor got;
    got.CopyFrom(c);
    for (int64_t i = 0; i < got.numel(); ++i) {
      const float v = got.data<float>()[i];
      if (beta == 0.f) {
        EXPECT_EQ(v, 0.f) << i;
      } else if (i == 7) {
        EXPECT_TRUE(std::isnan(v)) << i;
      } else {
        EXPECT_EQ(v, 1.5f) << i;
      }
    }
  }
}

TEST(FCGpuTest, Registered) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "FC"));
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "FCGradient"));
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "FCTransposed"));
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "FCTransposedGradient"));
}

std::map<std::string, Tensor> FCInputs(int64_t M, int64_t K, int64_t N, uint32_t seed) {
  return {{"X", RandomTensor({M, K}, seed)},
          {"W", RandomTensor({N, K}, seed + 1)},
          {"b", RandomTensor({N}, seed + 2)}};
}

TEST(FCGpuTest, ForwardMatchesCpu) {
  REQUIRE_GPU();
  const auto def = MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"});
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(def, AsDtype(FCInputs(5, 12, 7, 1), dt));
    // Tensor-core sized, with odd N.
    DeviceChecker().Check(def, AsDtype(FCInputs(64, 128, 33, 4), dt));
    // X split at axis 2, W at axis_w 2.
    DeviceChecker().Check(MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"},
                                          {MakeArgument("axis", 2), MakeArgument("axis_w", 2)}),
                          AsDtype({{"X", RandomTensor({2, 3, 4}, 7)},
                                   {"W", RandomTensor({5, 1, 4}, 8)},
                                   {"b", RandomTensor({5}, 9)}},
                                  dt));
  }
  // float16 and bfloat16 data with a float bias.
  for (DataType dt : {DataType::FLOAT16, DataType::BFLOAT16}) {
    auto in = AsDtype(FCInputs(9, 13, 6, 10), dt);
    in["b"] = RandomTensor({6}, 12);
    DeviceChecker().Check(def, in);
  }
  // bfloat16 data takes a float or bfloat16 bias only.
  auto mixed = AsDtype(FCInputs(9, 13, 6, 10), DataType::BFLOAT16);
  mixed["b"] = ToHalf(RandomTensor({6}, 12));
  ExpectCudaError(def, mixed, "with bfloat16 X needs a float or bfloat16 bias");
}

TEST(FCGpuTest, GradientMatchesCpu) {
  REQUIRE_GPU();
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    for (auto dims : {std::vector<int64_t>{9, 13, 6}, std::vector<int64_t>{64, 96, 40}}) {
      const int64_t M = dims[0], K = dims[1], N = dims[2];
      std::map<std::string, Tensor> in{{"X", RandomTensor({M, K}, 21)},
                                       {"W", RandomTensor({N, K}, 22)},
                                       {"dY", RandomTensor({M, N}, 23)}};
      DeviceChecker().Check(MakeOperatorDef("FCGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}),
                            AsDtype(in, dt));
      DeviceChecker().Check(MakeOperatorDef("FCGradient", "", {"X", "W", "dY"}, {"dW", "db"}),
                            AsDtype(in, dt));
    }
  }
}

// The FP32 path must be real FP32 math: TF32 (10-bit mantissa inputs) would miss this tolerance by
// an order of magnitude over K = 512 products.
TEST(FCGpuTest, Fp32IsNotTf32) {
  REQUIRE_GPU();
  DeviceCheckOptions opts;
  opts.atol = 2e-4f;
  opts.rtol = 0.f;
  DeviceChecker(opts).Check(MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"}),
                            FCInputs(32, 512, 48, 31));
  DeviceChecker(opts).Check(MakeOperatorDef("FCGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}),
                            {{"X", RandomTensor({512, 64}, 32)},
                             {"W", RandomTensor({48, 64}, 33)},
                             {"dY", RandomTensor({512, 48}, 34)}});
}

TEST(FCGpuTest, Errors) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({4, 6}, 1), w = RandomTensor({3, 6}, 2);
  const Tensor b = RandomTensor({3}, 3);
  const OperatorDef fc = MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"});
  ExpectCudaError(fc, {{"X", x}, {"W", RandomTensor({3, 5}, 2)}, {"b", b}},
                  "inner dimensions must match");
  ExpectCudaError(fc, {{"X", x}, {"W", w}, {"b", RandomTensor({4}, 3)}},
                  "b has 4 elements");
  ExpectCudaError(fc, {{"X", ToHalf(x)}, {"W", w}, {"b", b}}, "of one dtype");
}

// ---- FCTransposed: W (K, N) ---------------------------------------------------------------------

TEST(FCTransposedGpuTest, ForwardMatchesCpu) {
  REQUIRE_GPU();
  const auto def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"});
  auto inputs = [](int64_t M, int64_t K, int64_t N, uint32_t seed) {
    return std::map<std::string, Tensor>{{"X", RandomTensor({M, K}, seed)},
                                         {"W", RandomTensor({K, N}, seed + 1)},
                                         {"b", RandomTensor({N}, seed + 2)}};
  };
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(def, AsDtype(inputs(5, 12, 7, 1), dt));
    DeviceChecker().Check(def, AsDtype(inputs(64, 128, 33, 4), dt));
    DeviceChecker().Check(MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"},
                                          {MakeArgument("axis", 2), MakeArgument("axis_w", 1)}),
                          AsDtype({{"X", RandomTensor({2, 3, 4}, 7)},
                                   {"W", RandomTensor({4, 5, 1}, 8)},
                                   {"b", RandomTensor({5}, 9)}},
                                  dt));
  }
  // The FP32 path is real FP32 math here too.
  DeviceCheckOptions opts;
  opts.atol = 2e-4f;
  opts.rtol = 0.f;
  DeviceChecker(opts).Check(def, inputs(32, 512, 48, 31));
}

TEST(FCTransposedGpuTest, GradientMatchesCpu) {
  REQUIRE_GPU();
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    for (auto dims : {std::vector<int64_t>{9, 13, 6}, std::vector<int64_t>{64, 96, 40},
                      std::vector<int64_t>{0, 5, 3}}) {
      const int64_t M = dims[0], K = dims[1], N = dims[2];
      std::map<std::string, Tensor> in{{"X", RandomTensor({M, K}, 41)},
                                       {"W", RandomTensor({K, N}, 42)},
                                       {"dY", RandomTensor({M, N}, 43)}};
      DeviceChecker().Check(
          MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}),
          AsDtype(in, dt));
      DeviceChecker().Check(
          MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db"}),
          AsDtype(in, dt));
    }
  }
}

TEST(FCTransposedGpuTest, Errors) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({4, 6}, 1), b = RandomTensor({3}, 3);
  const OperatorDef def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"});
  // W laid out for FC, (N, K), instead of (K, N).
  ExpectCudaError(def, {{"X", x}, {"W", RandomTensor({3, 6}, 2)}, {"b", b}},
                  "inner dimensions must match");
  ExpectCudaError(def, {{"X", ToHalf(x)}, {"W", RandomTensor({6, 3}, 2)}, {"b", b}},
                  "of one dtype");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
