// operators/dnnl_util.h: the 1 x 1 filter gradient's blocked -> plain transpose DnnlArg::Store
// runs instead of oneDNN's reorder equals that reorder bit for bit, and is taken only for the
// layout it handles.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#endif

namespace halfcaf {
namespace {

#ifdef HALFCAF_WITH_DNNL
using dnnl::memory;
using tag = memory::format_tag;

memory::desc Desc(const memory::dims& d, tag t, memory::data_type dt = memory::data_type::f32) {
  return memory::desc(d, dt, t);
}

TEST(DnnlFilterLayoutTest, TransposeEqualsOneDnnReorder) {
  for (const memory::dims& d : {memory::dims{32, 48, 1, 1}, memory::dims{512, 64, 1, 1},
                                memory::dims{16, 16, 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << d[0] << " x " << d[1]);
    const memory::desc blocked = Desc(d, tag::ABcd16b16a), plain = Desc(d, tag::abcd);
    const auto oi = Blocked1x1FilterDims(blocked, plain);
    ASSERT_EQ(oi.first, d[0]);
    ASSERT_EQ(oi.second, d[1]);
    const size_t n = static_cast<size_t>(d[0] * d[1]);
    std::vector<float> src(n), want(n, -1.f), got(n, -2.f);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<float>(i) * 0.5f - 3.f;
    memory from(blocked, DnnlEngine(), src.data()), to(plain, DnnlEngine(), want.data());
    dnnl::reorder(from, to).execute(DnnlStream(), from, to);
    DnnlStream().wait();
    Blocked1x1FilterToPlain(d[0], d[1], src.data(), got.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0);
  }
}

TEST(DnnlFilterLayoutTest, OtherLayoutsKeepOneDnnsReorder) {
  const memory::dims pointwise{32, 48, 1, 1};
  EXPECT_EQ(Blocked1x1FilterDims(Desc({32, 48, 3, 3}, tag::ABcd16b16a),
                                 Desc({32, 48, 3, 3}, tag::abcd)).first, 0);  // 3 x 3
  EXPECT_EQ(Blocked1x1FilterDims(Desc({24, 48, 1, 1}, tag::ABcd16b16a),
                                 Desc({24, 48, 1, 1}, tag::abcd)).first, 0);  // padded blocks
  EXPECT_EQ(Blocked1x1FilterDims(Desc(pointwise, tag::ABcd8b8a), Desc(pointwise, tag::abcd)).first,
            0);  // AVX2's blocks
  EXPECT_EQ(Blocked1x1FilterDims(Desc(pointwise, tag::ABcd16b16a), Desc(pointwise, tag::bacd))
                .first, 0);  // IOHW
  EXPECT_EQ(Blocked1x1FilterDims(Desc(pointwise, tag::ABcd16b16a, memory::data_type::bf16),
                                 Desc(pointwise, tag::abcd, memory::data_type::bf16)).first, 0);
}
#else
TEST(DnnlFilterLayoutTest, TransposeEqualsOneDnnReorder) { GTEST_SKIP() << "built without oneDNN"; }
#endif

}  // namespace
}  // namespace halfcaf
