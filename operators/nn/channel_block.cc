#include "operators/nn/channel_block.h"

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#endif

namespace halfcaf {

#ifdef HALFCAF_WITH_DNNL
namespace {

// The source layout oneDNN picks for a training convolution typical of a convnet's body
// (64 -> 64 channels, 3 x 3, 28 x 28), as its channel block.
int64_t ProbeChannelBlock() {
  using dnnl::memory;
  try {
    const memory::desc any_image({8, 64, 28, 28}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc any_filter({64, 64, 3, 3}, memory::data_type::f32, memory::format_tag::any);
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any_image,
        any_filter, memory::desc(), any_image, {1, 1}, {0, 0}, {1, 1}, {1, 1});
    const dnnl::convolution_forward::primitive_desc pd(desc, DnnlEngine());
    if (IsReferenceImpl(pd)) return 0;
    for (int64_t block : {16, 8, 4}) {
      if (pd.src_desc() ==
          memory::desc({8, 64, 28, 28}, memory::data_type::f32, ChannelBlockedTag(block))) {
        return block;
      }
    }
  } catch (const dnnl::error&) {
  }
  return 0;
}

}  // namespace
#endif

int64_t CpuConvChannelBlock() {
#ifdef HALFCAF_WITH_DNNL
  static const int64_t block = ProbeChannelBlock();
  return block;
#else
  return 0;
#endif
}

}  // namespace halfcaf
