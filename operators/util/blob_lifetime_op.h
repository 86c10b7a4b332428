// Blob lifetime operators (Caffe2's Free and ZeroGradient), any data type, CPU and CUDA.
//
// Free: n inputs -> the same n blobs as outputs (enforced one-to-one in place). Empties each blob,
//   releasing its data; a later op reading it fails until something writes it again. On CUDA the
//   op's stream is drained first, so no queued kernel still uses the memory it gives back.
//   Never differentiated.
// ZeroGradient: X -> nothing. Does nothing when run; it exists for the backward pass, which
//   always processes it and gives X the gradient ConstantFill(X, value 0) (X's shape, float),
//   summed with any other gradient X gets.
#pragma once

#include "core/operator.h"

namespace halfcaf {

template <class Context>
class FreeOp final : public Operator<Context> {
 public:
  using Operator<Context>::Operator;
  void RunOnDevice() override {
    this->context_.FinishDevice();
    for (int i = 0; i < this->OutputSize(); ++i) this->OutputBlob(i)->Reset();
  }
};

template <class Context>
class ZeroGradientOp final : public Operator<Context> {
 public:
  using Operator<Context>::Operator;
  void RunOnDevice() override {}
};

}  // namespace halfcaf
