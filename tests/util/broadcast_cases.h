// Shapes of A and B that broadcast NumPy-style (without broadcast=1), for the tests of Add, Sub,
// Mul, Div and their gradients on CPU and CUDA.
#pragma once

#include <cstdint>
#include <vector>

namespace halfcaf {
namespace testing {

const char* const kBinaryOps[] = {"Add", "Sub", "Mul", "Div"};

struct ShapePair {
  std::vector<int64_t> a, b;
};

inline std::vector<ShapePair> NumpyBroadcastPairs() {
  return {
      {{3, 4, 5}, {3, 1, 5}},        // size-1 dim inside B
      {{1, 4, 1}, {3, 1, 5}},        // both repeated
      {{5}, {3, 4, 5}},              // B bigger than A
      {{3, 4, 5}, {5}},              // trailing
      {{3, 4, 5}, {4, 1}},           // fewer dims, size-1 inside
      {{2, 3, 4, 5}, {4, 5}},        // merges to 6 x 20
      {{2, 1, 4, 1}, {3, 1, 5}},     // four dims from three
      {{}, {3, 4}},                  // scalar A
      {{3, 4}, {}},                  // scalar B
      {{1}, {3, 4, 5}},              // one-element A
      {{3, 4, 5}, {1}},              // one-element B
      {{1}, {1, 1, 1}},              // one element, more dims
      {{13, 1, 127}, {1, 7, 127}},   // odd sizes, several rows
      {{0, 3}, {3}},                 // empty output
      {{2, 1}, {0}},                 // empty output from an empty B
  };
}

}  // namespace testing
}  // namespace halfcaf
