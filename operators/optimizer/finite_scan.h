// Whether a float, float16 or bfloat16 tensor holds only finite values (no inf, no nan): the
// overflow check of loss scaling, and the guard of kernels whose inf / nan handling differs from
// halfcaf's own (oneDNN's max pooling). Scanned in parallel blocks, branch-free inside a block so
// the compiler vectorizes it.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace halfcaf {

bool AllFinite(const Tensor& t);
// The same over several tensors, in one parallel pass.
bool AllFinite(const std::vector<const Tensor*>& tensors);

}  // namespace halfcaf
