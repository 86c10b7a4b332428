// data/reader_state.h: the saved position of a data reader, and the interface through which the
// trainer saves and restores a reading operator without knowing its class.
#include "data/reader_state.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/operator.h"
#include "core/workspace.h"
#include "core/argument.h"

namespace halfcaf {
namespace {

TEST(DataReaderStateTest, VectorRoundTripKeepsTheFullSeed) {
  DataReaderState s;
  s.epoch = 7;
  s.index = 123;
  s.seed = 0xF000000000000001ull;  // above INT64_MAX: stored as a negative int64, restored exactly
  const std::vector<int64_t> v = s.ToVector();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 7);
  EXPECT_EQ(v[1], 123);
  EXPECT_EQ(DataReaderState::FromVector(v), s);
  DataReaderState other = s;
  other.index = 124;
  EXPECT_NE(other, s);
}

TEST(DataReaderStateTest, BadVectorsAreRefused) {
  EXPECT_THROW(DataReaderState::FromVector({}), EnforceNotMet);
  EXPECT_THROW(DataReaderState::FromVector({1, 2, 3, 4}), EnforceNotMet);
  EXPECT_THROW(DataReaderState::FromVector({-1, 0, 0}), EnforceNotMet);
  EXPECT_THROW(DataReaderState::FromVector({0, -5, 0}), EnforceNotMet);
}

// DataInput is reached through ResumableReader from the OperatorBase a net holds, as the trainer
// does: a state saved through the interface and restored on a fresh op gives the same batch.
TEST(ResumableReaderTest, DataInputSavesAndRestoresThroughTheInterface) {
  Workspace ws;
  auto make = [&](const std::string& out) {
    OperatorDef def = MakeOperatorDef("DataInput", "", {}, {out + "_data", out + "_label"},
                                      {MakeArgument("format", "synthetic"),
                                       MakeArgument("batch_size", int64_t{5}),
                                       MakeArgument("synthetic_shape", std::vector<int64_t>{1, 4, 4}),
                                       MakeArgument("synthetic_count", int64_t{23}),
                                       MakeArgument("prefetch", int64_t{0}),
                                       MakeArgument("seed", int64_t{3})});
    return CreateOperator(def, &ws);
  };
  std::unique_ptr<OperatorBase> a = make("a");
  auto* ra = dynamic_cast<ResumableReader*>(a.get());
  ASSERT_NE(ra, nullptr);
  EXPECT_EQ(ra->num_samples(), 23);
  EXPECT_EQ(ra->batch_size(), 5);
  for (int i = 0; i < 6; ++i) a->Run();  // 30 samples: into the second epoch
  const DataReaderState saved = ra->GetState();
  EXPECT_EQ(saved.epoch, 1);
  EXPECT_EQ(saved.index, 7);
  a->Run();

  std::unique_ptr<OperatorBase> b = make("b");
  auto* rb = dynamic_cast<ResumableReader*>(b.get());
  ASSERT_NE(rb, nullptr);
  rb->SetState(saved);
  b->Run();
  const Tensor& da = ws.GetTensor("a_data");
  const Tensor& db = ws.GetTensor("b_data");
  ASSERT_EQ(da.dims(), db.dims());
  for (int64_t i = 0; i < da.numel(); ++i) ASSERT_EQ(da.data<float>()[i], db.data<float>()[i]);
  const Tensor& la = ws.GetTensor("a_label");
  const Tensor& lb = ws.GetTensor("b_label");
  for (int64_t i = 0; i < la.numel(); ++i) ASSERT_EQ(la.data<int32_t>()[i], lb.data<int32_t>()[i]);
}

}  // namespace
}  // namespace halfcaf
