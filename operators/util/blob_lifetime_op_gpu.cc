// Free and ZeroGradient on CUDA (the classes are device-generic, blob_lifetime_op.h; schemas and
// gradient registrations are in blob_lifetime_op.cc).
#include "gpu/cuda_context.h"
#include "operators/util/blob_lifetime_op.h"

namespace halfcaf {

REGISTER_CUDA_OPERATOR(Free, FreeOp<CUDAContext>);
REGISTER_CUDA_OPERATOR(ZeroGradient, ZeroGradientOp<CUDAContext>);

}  // namespace halfcaf
