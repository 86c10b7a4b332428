// The per-element rules of the adaptive optimizers, shared by the CPU operators and the CUDA
// kernels (host + device), so both compute the same thing in the same order. Each rule updates
// its state in place and returns the direction d: Caffe2's operators add lr * d to the parameter
// (their lr is negative), the fused mixed-precision updates subtract it (PyTorch's sign).
//   Adagrad   h = decay h + g^2;                      d = g / (sqrt(h) + epsilon)
//   Adadelta  h = decay h + (1 - decay) g^2;          d = sqrt(u + epsilon) / sqrt(h + epsilon) g;
//             u = decay u + (1 - decay) d^2           (PyTorch's Adadelta: decay = rho)
//   RMSprop   (PyTorch's) v = alpha v + (1 - alpha) g^2;  s = g / (sqrt(v) + epsilon);
//             d = s, or with momentum b = momentum b + s and d = b
// Caffe2's RmsProp, with epsilon inside the square root and the rate inside the momentum, is
// CaffeRmsProp below.
#pragma once

#include <cmath>

#include "core/nan_math.h"  // HALFCAF_HOST_DEVICE

namespace halfcaf {

struct AdagradRule {
  float decay, epsilon;
  HALFCAF_HOST_DEVICE float operator()(float g, float& h, float& /*unused*/) const {
    h = decay * h + g * g;
    return g / (sqrtf(h) + epsilon);
  }
};

struct AdadeltaRule {
  float decay, epsilon;
  HALFCAF_HOST_DEVICE float operator()(float g, float& h, float& u) const {
    h = decay * h + (1.f - decay) * (g * g);
    const float d = sqrtf(u + epsilon) / sqrtf(h + epsilon) * g;
    u = decay * u + (1.f - decay) * (d * d);
    return d;
  }
};

struct RmsPropRule {
  float alpha, momentum, epsilon;
  HALFCAF_HOST_DEVICE float operator()(float g, float& v, float& b) const {
    v = alpha * v + (1.f - alpha) * (g * g);
    const float s = g / (sqrtf(v) + epsilon);
    if (momentum <= 0.f) return s;
    b = momentum * b + s;
    return b;
  }
};

// Caffe2's RmsProp: ms += (1 - decay) (g^2 - ms); mom = momentum mom + lr g / sqrt(epsilon + ms);
// returns the new mom (the op's grad_out).
HALFCAF_HOST_DEVICE inline float CaffeRmsProp(float g, float lr, float decay, float momentum,
                                              float epsilon, float& ms, float& mom) {
  ms = ms + (1.f - decay) * (g * g - ms);
  mom = mom * momentum + lr * g / sqrtf(epsilon + ms);
  return mom;
}

// Caffe2's Lars rescale of the learning rate from the L2 norms of a parameter and its gradient:
// local = trust / (grad_norm / param_norm + wd + offset) when param_norm > 0, else 1;
// max(min(local, lr_max), lr_min). A non-finite gradient (an overflowed step, which the update
// then skips) gives lr_min.
HALFCAF_HOST_DEVICE inline float LarsRate(double param_norm, double grad_norm, float wd,
                                          float trust, float lr_max, float offset, float lr_min) {
  double local = 1.0;
  if (param_norm > 0) local = trust / (grad_norm / param_norm + wd + offset);
  if (!(local == local)) local = lr_min;
  return static_cast<float>(fmax(fmin(local, static_cast<double>(lr_max)),
                                 static_cast<double>(lr_min)));
}

}  // namespace halfcaf
