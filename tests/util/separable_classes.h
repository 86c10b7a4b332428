// A small, linearly separable classification problem for end-to-end training tests: n points in
// `dims` dimensions (dims >= classes); point i has class i % classes and lies at 2 * e_class plus
// uniform noise in [-0.5, 0.5] per coordinate.
#pragma once

#include <cstdint>
#include <random>

#include "core/tensor.h"

namespace halfcaf {
namespace testing {

struct SeparableClasses {
  Tensor data;   // float [n, dims]
  Tensor label;  // int32 [n]

  SeparableClasses(int64_t n, int64_t dims, int classes, uint32_t seed)
      : data({n, dims}, DataType::FLOAT), label({n}, DataType::INT32) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> noise(-0.5f, 0.5f);
    float* x = data.mutable_data<float>();
    int32_t* y = label.mutable_data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      y[i] = static_cast<int32_t>(i % classes);
      for (int64_t d = 0; d < dims; ++d) {
        x[i * dims + d] = (d == y[i] ? 2.f : 0.f) + noise(rng);
      }
    }
  }
};

}  // namespace testing
}  // namespace halfcaf
