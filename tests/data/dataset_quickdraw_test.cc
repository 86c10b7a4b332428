// data/dataset_quickdraw.cc: a folder of Quick, Draw! numpy bitmaps (<class>.npy, uint8 (N, 784)
// or (N, 28, 28)) as a data set: labels in file-name order, interleaved classes, disjoint train
// and held-out test splits, the per-class cap, the bad folders and files, and a DataInput op
// reading it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/argument.h"
#include "core/operator.h"
#include "core/workspace.h"
#include "data/dataset_reader.h"
#include "data/npy.h"
#include "tests/util/error_of.h"

namespace halfcaf {
namespace {

namespace fs = std::filesystem;
using testing::ErrorOf;

constexpr int kPixels = 784;

// Image r of class c: pixel 0 is the class, pixel 1 the row, the others a pattern of both.
uint8_t Pixel(int c, int r, int k) {
  if (k == 0) return static_cast<uint8_t>(c);
  if (k == 1) return static_cast<uint8_t>(r);
  return static_cast<uint8_t>((c * 31 + r * 7 + k) % 256);
}

class QuickDrawTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("halfcaf_quickdraw_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes class file `name` holding `n` images of class id `c` (pixel 0), shaped (n, 784) or
  // (n, 28, 28).
  void WriteClass(const std::string& name, int c, int n, bool square = false) const {
    Tensor t(square ? std::vector<int64_t>{n, 28, 28} : std::vector<int64_t>{n, kPixels},
             DataType::UINT8);
    uint8_t* p = t.mutable_data<uint8_t>();
    for (int r = 0; r < n; ++r) {
      for (int k = 0; k < kPixels; ++k) p[r * kPixels + k] = Pixel(c, r, k);
    }
    WriteNpy(t, Path(name));
  }

  // The three classes of most tests: 50, 40 and 30 images (held out: 5, 4 and 3), written out of
  // name order, with a file that is not a class beside them.
  void WriteThreeClasses(bool square = false) const {
    WriteClass("cat.npy", 2, 30, square);
    WriteClass("apple.npy", 0, 50, square);
    WriteClass("banana.npy", 1, 40, square);
    std::ofstream(Path("README.txt")) << "not a class";
  }

  fs::path dir_;
};

struct Sample {
  int label, cls, row;
};

// Every sample's label and the class and row its pixels say, checking the pixels on the way.
std::vector<Sample> Samples(const DataSource& d) {
  EXPECT_EQ(d.sample_dims(), (std::vector<int64_t>{1, 28, 28}));
  std::vector<Sample> out;
  std::vector<uint8_t> px(kPixels);
  for (int64_t i = 0; i < d.size(); ++i) {
    d.ReadSample(i, px.data());
    const Sample s{d.Label(i), px[0], px[1]};
    for (int k = 0; k < kPixels; ++k) {
      if (px[k] != Pixel(s.cls, s.row, k)) {
        ADD_FAILURE() << "sample " << i << " pixel " << k << " is " << int{px[k]};
        break;
      }
    }
    out.push_back(s);
  }
  return out;
}

// Rows of each class, in sample order.
std::vector<std::vector<int>> RowsByClass(const std::vector<Sample>& samples) {
  std::vector<std::vector<int>> rows(3);
  for (const auto& s : samples) {
    EXPECT_EQ(s.label, s.cls) << "label does not match the class file";
    rows.at(static_cast<size_t>(s.cls)).push_back(s.row);
  }
  return rows;
}

std::vector<int> Range(int from, int to) {
  std::vector<int> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}

TEST_F(QuickDrawTest, TrainSplitIsInterleavedAndLabelledByFileName) {
  WriteThreeClasses();
  auto d = LoadQuickDrawDataset(dir_.string(), "train", 0);
  ASSERT_EQ(d->size(), 45 + 36 + 27);
  EXPECT_EQ(d->description(),
            "quickdraw '" + dir_.string() + "' (train: 3 classes, 108 samples of [1, 28, 28])");
  const auto samples = Samples(*d);
  // Round-robin while all three classes last (27 rounds), then apple / banana, then apple.
  for (int i = 0; i < 81; ++i) ASSERT_EQ(samples[i].label, i % 3) << i;
  for (int i = 81; i < 99; ++i) ASSERT_EQ(samples[i].label, (i - 81) % 2) << i;
  for (int i = 99; i < 108; ++i) ASSERT_EQ(samples[i].label, 0) << i;
  const auto rows = RowsByClass(samples);
  EXPECT_EQ(rows[0], Range(0, 45));
  EXPECT_EQ(rows[1], Range(0, 36));
  EXPECT_EQ(rows[2], Range(0, 27));
}

TEST_F(QuickDrawTest, TestSplitIsTheHeldOutTailNeverInTrain) {
  WriteThreeClasses();
  auto test = LoadQuickDrawDataset(dir_.string(), "test", 0);
  ASSERT_EQ(test->size(), 5 + 4 + 3);
  const auto samples = Samples(*test);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(samples[i].label, i % 3);
  const auto rows = RowsByClass(samples);
  EXPECT_EQ(rows[0], Range(45, 50));
  EXPECT_EQ(rows[1], Range(36, 40));
  EXPECT_EQ(rows[2], Range(27, 30));
  // Disjoint from train, and together they are every image.
  const auto train = RowsByClass(Samples(*LoadQuickDrawDataset(dir_.string(), "train", 0)));
  for (int c = 0; c < 3; ++c) {
    std::set<int> all(train[c].begin(), train[c].end());
    for (int r : rows[c]) EXPECT_TRUE(all.insert(r).second) << "class " << c << " row " << r;
    EXPECT_EQ(all.size(), size_t{50} - 10 * c);
  }
}

TEST_F(QuickDrawTest, PerClassCapsEachClass) {
  WriteThreeClasses();
  const auto rows10 = RowsByClass(Samples(*LoadQuickDrawDataset(dir_.string(), "train", 10)));
  for (int c = 0; c < 3; ++c) EXPECT_EQ(rows10[c], Range(0, 10)) << c;
  // More than a class has: the whole train part, never the held-out rows.
  const auto rows40 = RowsByClass(Samples(*LoadQuickDrawDataset(dir_.string(), "train", 40)));
  EXPECT_EQ(rows40[0], Range(0, 40));
  EXPECT_EQ(rows40[1], Range(0, 36));
  EXPECT_EQ(rows40[2], Range(0, 27));
  const auto test2 = RowsByClass(Samples(*LoadQuickDrawDataset(dir_.string(), "test", 2)));
  EXPECT_EQ(test2[0], Range(45, 47));
  EXPECT_EQ(test2[1], Range(36, 38));
  EXPECT_EQ(test2[2], Range(27, 29));
}

TEST_F(QuickDrawTest, SquareArraysGiveTheSameSet) {
  WriteThreeClasses(/*square=*/true);
  auto d = LoadQuickDrawDataset(dir_.string(), "train", 0);
  const auto rows = RowsByClass(Samples(*d));
  EXPECT_EQ(rows[0], Range(0, 45));
  EXPECT_EQ(rows[2], Range(0, 27));
}

TEST_F(QuickDrawTest, TooFewClassesAreRefusedListingWhatIsThere) {
  std::ofstream(Path("notes.txt")) << "x";
  std::string e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "train", 0); });
  EXPECT_NE(e.find("holds 0 .npy file(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("at least 2 classes"), std::string::npos) << e;
  EXPECT_NE(e.find("notes.txt"), std::string::npos) << e;
  WriteClass("only.npy", 0, 20);
  e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "train", 0); });
  EXPECT_NE(e.find("holds 1 .npy file(s) (only.npy)"), std::string::npos) << e;
  e = ErrorOf([&] { LoadQuickDrawDataset(Path("missing"), "train", 0); });
  EXPECT_NE(e.find("no such file or directory"), std::string::npos) << e;
  e = ErrorOf([&] { LoadQuickDrawDataset(Path("only.npy"), "train", 0); });
  EXPECT_NE(e.find("is not a folder"), std::string::npos) << e;
}

TEST_F(QuickDrawTest, BadClassFilesAndArgumentsAreRefused) {
  WriteThreeClasses();
  // A truncated class file fails when the set is loaded, naming the file.
  fs::resize_file(Path("banana.npy"), fs::file_size(Path("banana.npy")) - 100);
  std::string e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "train", 0); });
  EXPECT_NE(e.find("npy file '" + Path("banana.npy") + "' is truncated"), std::string::npos) << e;
  WriteClass("banana.npy", 1, 40);
  WriteNpy(Tensor({3, 784}, DataType::FLOAT), Path("float.npy"));
  e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "train", 0); });
  EXPECT_NE(e.find("'" + Path("float.npy") + "' holds float data; expected uint8"),
            std::string::npos)
      << e;
  fs::remove(Path("float.npy"));
  WriteNpy(Tensor({3, 100}, DataType::UINT8), Path("small.npy"));
  e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "train", 0); });
  EXPECT_NE(e.find("has shape [3, 100]; expected (N, 784) or (N, 28, 28)"), std::string::npos)
      << e;
  fs::remove(Path("small.npy"));
  e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "val", 0); });
  EXPECT_NE(e.find("split must be train or test, got 'val'"), std::string::npos) << e;
  e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "train", -1); });
  EXPECT_NE(e.find("per_class must be >= 0"), std::string::npos) << e;
}

TEST_F(QuickDrawTest, ClassesTooSmallForAHeldOutPartHaveNoTestSet) {
  WriteClass("a.npy", 0, 9);
  WriteClass("b.npy", 1, 5);
  EXPECT_EQ(LoadQuickDrawDataset(dir_.string(), "train", 0)->size(), 14);
  const std::string e = ErrorOf([&] { LoadQuickDrawDataset(dir_.string(), "test", 0); });
  EXPECT_NE(e.find("has no test samples"), std::string::npos) << e;
}

TEST_F(QuickDrawTest, LoadDataSourceKeepsSplitsApart) {
  WriteThreeClasses();
  auto train = LoadDataSourceShared("quickdraw", dir_.string());
  auto test = LoadDataSourceShared("quickdraw", dir_.string(), "test");
  EXPECT_EQ(train->size(), 108);
  EXPECT_EQ(test->size(), 12);
  EXPECT_EQ(LoadDataSourceShared("quickdraw", dir_.string(), "train", 0), train);
  EXPECT_EQ(LoadDataSourceShared("quickdraw", dir_.string(), "train", 3)->size(), 9);
  const std::string e = ErrorOf([&] { LoadDataSource("idx", Path("x"), "test"); });
  EXPECT_NE(e.find("data format 'idx' has no split or per_class"), std::string::npos) << e;
}

TEST_F(QuickDrawTest, DataInputReadsTheFolder) {
  WriteThreeClasses();
  Workspace ws;
  auto op = CreateOperator(
      MakeOperatorDef("DataInput", "", {}, {"data", "label"},
                      {MakeArgument("source", dir_.string()), MakeArgument("format", "quickdraw"),
                       MakeArgument("split", "test"), MakeArgument("batch_size", int64_t{6}),
                       MakeArgument("shuffle", int64_t{0}), MakeArgument("prefetch", int64_t{0}),
                       MakeArgument("scale", 1.f)}),
      &ws);
  for (int b = 0; b < 2; ++b) {
    op->Run(0);
    const Tensor& data = ws.GetTensor("data");
    const Tensor& label = ws.GetTensor("label");
    ASSERT_EQ(data.dims(), (std::vector<int64_t>{6, 1, 28, 28}));
    for (int s = 0; s < 6; ++s) {
      const int i = b * 6 + s;
      // Test samples: 3 rounds of all classes (rows 45.., 36.., 27..), then apple / banana, apple.
      const int want = i < 9 ? i % 3 : (i == 11 ? 0 : (i - 9) % 2);
      EXPECT_EQ(label.data<int32_t>()[s], want) << i;
      EXPECT_EQ(data.data<float>()[s * kPixels], static_cast<float>(want)) << i;
      const int row = static_cast<int>(data.data<float>()[s * kPixels + 1]);
      EXPECT_GE(row, want == 0 ? 45 : want == 1 ? 36 : 27) << "a training image in the test split";
    }
  }
  // per_class and split belong to quickdraw: other formats refuse them.
  const std::string e = ErrorOf([&] {
    CreateOperator(MakeOperatorDef("DataInput", "", {}, {"d", "l"},
                                   {MakeArgument("source", Path("x")),
                                    MakeArgument("format", "idx"), MakeArgument("split", "test"),
                                    MakeArgument("batch_size", int64_t{2})}),
                   &ws);
  });
  EXPECT_NE(e.find("`split` and `per_class` are for format quickdraw"), std::string::npos) << e;
}

}  // namespace
}  // namespace halfcaf
