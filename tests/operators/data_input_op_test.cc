#include "operators/input/data_input_op.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <thread>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  } else {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << path;
  }
}

std::vector<uint8_t> IdxBytes(uint32_t magic, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Small idx set: kN images of kH x kW; pixel k of image n is (n * 37 + k * 11) % 256, so the first
// pixel (n * 37) identifies the image.
constexpr int kN = 5, kH = 3, kW = 4;
const std::vector<uint8_t> kIdxLabels = {3, 1, 4, 1, 5};

uint8_t IdxPixel(int n, int k) { return static_cast<uint8_t>((n * 37 + k * 11) % 256); }

std::vector<uint8_t> IdxImagePixels() {
  std::vector<uint8_t> px;
  for (int n = 0; n < kN; ++n) {
    for (int k = 0; k < kH * kW; ++k) px.push_back(IdxPixel(n, k));
  }
  return px;
}

// CIFAR records: pixel k (CHW) of record r is (r * 53 + k * 7) % 256; label (r * 3) % 10.
std::vector<uint8_t> CifarBytes(int first, int count) {
  std::vector<uint8_t> out;
  for (int r = first; r < first + count; ++r) {
    out.push_back(static_cast<uint8_t>((r * 3) % 10));
    for (int k = 0; k < 3072; ++k) out.push_back(static_cast<uint8_t>((r * 53 + k * 7) % 256));
  }
  return out;
}

class DataInputOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("halfcaf_data_input_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes train-images/labels; returns the images path.
  std::string WriteIdx(bool gz_images = false, bool gz_labels = false,
                       const std::string& prefix = "train") {
    const std::string ip = Path(prefix + "-images-idx3-ubyte" + (gz_images ? ".gz" : ""));
    WriteBytes(ip, IdxBytes(0x803, {kN, kH, kW}, IdxImagePixels()), gz_images);
    WriteBytes(Path(prefix + "-labels-idx1-ubyte" + (gz_labels ? ".gz" : "")),
               IdxBytes(0x801, {kN}, kIdxLabels), gz_labels);
    return ip;
  }

  fs::path dir_;
};

struct Batch {
  std::vector<int64_t> dims;
  std::vector<float> data;
  std::vector<int32_t> labels;
};

OperatorDef DataDef(std::vector<Argument> args, bool position = false) {
  std::vector<std::string> outs = {"data", "label"};
  if (position) outs.push_back("position");
  return MakeOperatorDef("DataInput", "", {}, outs, args);
}

Batch RunBatch(OperatorBase* op, Workspace* ws) {
  op->Run(0);
  Batch b;
  const Tensor& d = ws->GetTensor("data");
  b.dims = d.dims();
  b.data = ToFloatVector(d);
  const Tensor& l = ws->GetTensor("label");
  EXPECT_EQ(l.dtype(), DataType::INT32);
  b.labels.assign(l.data<int32_t>(), l.data<int32_t>() + l.numel());
  return b;
}

std::vector<Batch> RunBatches(const OperatorDef& def, int count) {
  Workspace ws;
  auto op = CreateOperator(def, &ws);
  std::vector<Batch> out;
  for (int i = 0; i < count; ++i) out.push_back(RunBatch(op.get(), &ws));
  return out;
}

// Which idx image each sample of a batch is (its first pixel is n * 37 / 255).
std::vector<int> IdxIds(const Batch& b) {
  std::vector<int> ids;
  const int64_t per = kH * kW;
  for (size_t s = 0; s < b.labels.size(); ++s) {
    const int first = static_cast<int>(std::lround(b.data[s * per] * 255.f));
    int id = -1;
    for (int n = 0; n < kN; ++n) {
      if (IdxPixel(n, 0) == first) id = n;
    }
    EXPECT_GE(id, 0) << "unknown sample";
    if (id >= 0) {
      EXPECT_EQ(b.labels[s], kIdxLabels[id]) << "label does not match sample " << id;
    }
    ids.push_back(id);
  }
  return ids;
}

void ExpectThrowsWith(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << parts[0];
  } catch (const EnforceNotMet& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "missing '" << p << "' in: " << e.what();
    }
  }
}

void ExpectCreateFails(const OperatorDef& def, const std::vector<std::string>& parts) {
  ExpectThrowsWith(
      [&] {
        Workspace ws;
        CreateOperator(def, &ws);
      },
      parts);
}

TEST_F(DataInputOpTest, IdxRawExactValues) {
  const std::string ip = WriteIdx();
  auto batches = RunBatches(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                                     MakeArgument("batch_size", 5), MakeArgument("shuffle", 0),
                                     MakeArgument("prefetch", 0)}),
                            1);
  const Batch& b = batches[0];
  EXPECT_EQ(b.dims, (std::vector<int64_t>{5, 1, kH, kW}));
  EXPECT_EQ(b.labels, std::vector<int32_t>(kIdxLabels.begin(), kIdxLabels.end()));
  for (int n = 0; n < kN; ++n) {
    for (int k = 0; k < kH * kW; ++k) {
      EXPECT_FLOAT_EQ(b.data[n * kH * kW + k], IdxPixel(n, k) / 255.f) << n << " " << k;
    }
  }
}

TEST_F(DataInputOpTest, IdxGzippedMatchesRaw) {
  const std::string raw = WriteIdx(false, false, "train");
  const std::string gz = WriteIdx(true, true, "t10k");
  EXPECT_EQ(IdxLabelsPath(gz), Path("t10k-labels-idx1-ubyte.gz"));
  auto args = [](const std::string& p) {
    return std::vector<Argument>{MakeArgument("source", p), MakeArgument("format", "idx"),
                                 MakeArgument("batch_size", 4), MakeArgument("seed", 3)};
  };
  auto a = RunBatches(DataDef(args(raw)), 3);
  auto b = RunBatches(DataDef(args(gz)), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a[i].data, b[i].data);
    EXPECT_EQ(a[i].labels, b[i].labels);
  }
}

TEST_F(DataInputOpTest, IdxLabelsFoundWithOtherCompression) {
  fs::create_directories(dir_ / "mixed");
  WriteBytes(Path("mixed/train-images-idx3-ubyte.gz"),
             IdxBytes(0x803, {kN, kH, kW}, IdxImagePixels()), true);
  WriteBytes(Path("mixed/train-labels-idx1-ubyte"), IdxBytes(0x801, {kN}, kIdxLabels), false);
  auto src = LoadIdxDataset(Path("mixed/train-images-idx3-ubyte.gz"));
  ASSERT_EQ(src->size(), kN);
  for (int n = 0; n < kN; ++n) EXPECT_EQ(src->Label(n), kIdxLabels[n]);
}

TEST_F(DataInputOpTest, ScaleMeanStd) {
  const std::string ip = WriteIdx();
  auto b = RunBatches(
      DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
               MakeArgument("batch_size", 2), MakeArgument("shuffle", 0),
               MakeArgument("scale", 0.5f), MakeArgument("mean", 10.f), MakeArgument("std", 4.f)}),
      1)[0];
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < kH * kW; ++k) {
      EXPECT_FLOAT_EQ(b.data[n * kH * kW + k], (IdxPixel(n, k) * 0.5f - 10.f) / 4.f);
    }
  }
}

TEST_F(DataInputOpTest, CifarValuesNchwNhwcAndPerChannelMean) {
  const std::string f = Path("data_batch_1.bin");
  WriteBytes(f, CifarBytes(0, 4), false);
  const std::vector<float> mean = {0.1f, 0.2f, 0.3f}, stdev = {0.5f, 1.f, 2.f};
  auto args = [&](const char* order) {
    return std::vector<Argument>{MakeArgument("source", f),     MakeArgument("format", "cifar10"),
                                 MakeArgument("batch_size", 3), MakeArgument("shuffle", 0),
                                 MakeArgument("order", order),  MakeArgument("mean", mean),
                                 MakeArgument("std", stdev)};
  };
  auto nchw = RunBatches(DataDef(args("NCHW")), 2);
  auto nhwc = RunBatches(DataDef(args("NHWC")), 2);
  EXPECT_EQ(nchw[0].dims, (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ(nhwc[0].dims, (std::vector<int64_t>{3, 32, 32, 3}));
  // Batch 2 wraps: records 3, 0, 1.
  const int records[2][3] = {{0, 1, 2}, {3, 0, 1}};
  for (int bi = 0; bi < 2; ++bi) {
    for (int s = 0; s < 3; ++s) {
      const int r = records[bi][s];
      EXPECT_EQ(nchw[bi].labels[s], (r * 3) % 10);
      EXPECT_EQ(nhwc[bi].labels[s], (r * 3) % 10);
      for (int c = 0; c < 3; ++c) {
        for (int hw = 0; hw < 1024; ++hw) {
          const int k = c * 1024 + hw;
          const float want = (((r * 53 + k * 7) % 256) * (1.f / 255.f) - mean[c]) / stdev[c];
          ASSERT_FLOAT_EQ(nchw[bi].data[s * 3072 + k], want);
          ASSERT_FLOAT_EQ(nhwc[bi].data[s * 3072 + hw * 3 + c], want);
        }
      }
    }
  }
}

TEST_F(DataInputOpTest, CifarFolderReadsTrainingBatchesInOrder) {
  fs::create_directories(dir_ / "cifar");
  WriteBytes(Path("cifar/data_batch_2.bin"), CifarBytes(2, 1), false);
  WriteBytes(Path("cifar/data_batch_1.bin"), CifarBytes(0, 2), false);
  WriteBytes(Path("cifar/data_batch_10.bin"), CifarBytes(3, 1), false);
  WriteBytes(Path("cifar/test_batch.bin"), CifarBytes(7, 3), false);
  auto src = LoadCifar10Dataset(Path("cifar"));
  ASSERT_EQ(src->size(), 4);
  std::vector<uint8_t> px(3072);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(src->Label(r), (r * 3) % 10);
    src->ReadSample(r, px.data());
    EXPECT_EQ(px[5], (r * 53 + 35) % 256);
  }
  fs::create_directories(dir_ / "cifar_test");
  WriteBytes(Path("cifar_test/test_batch.bin"), CifarBytes(7, 3), false);
  EXPECT_EQ(LoadCifar10Dataset(Path("cifar_test"))->size(), 3);
}

TEST_F(DataInputOpTest, Float16Output) {
  const std::string ip = WriteIdx();
  Workspace ws;
  auto op = CreateOperator(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                                    MakeArgument("batch_size", 5), MakeArgument("shuffle", 0),
                                    MakeArgument("dtype", "float16"), MakeArgument("mean", 0.5f)}),
                           &ws);
  op->Run(0);
  const Tensor& d = ws.GetTensor("data");
  ASSERT_EQ(d.dtype(), DataType::FLOAT16);
  EXPECT_EQ(d.dims(), (std::vector<int64_t>{5, 1, kH, kW}));
  for (int n = 0; n < kN; ++n) {
    for (int k = 0; k < kH * kW; ++k) {
      const float want = static_cast<float>(Half(IdxPixel(n, k) * (1.f / 255.f) - 0.5f));
      EXPECT_EQ(static_cast<float>(d.data<Half>()[n * kH * kW + k]), want);
    }
  }
  // Also as the enum value.
  auto op2 = CreateOperator(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                                     MakeArgument("batch_size", 2), MakeArgument("dtype", 12)}),
                            &ws);
  op2->Run(0);
  EXPECT_EQ(ws.GetTensor("data").dtype(), DataType::FLOAT16);
}

TEST_F(DataInputOpTest, ShufflePermutesEachEpochAndIsRepeatable) {
  const std::string ip = WriteIdx();
  auto def = [&](int seed, int prefetch) {
    return DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                    MakeArgument("batch_size", kN), MakeArgument("seed", seed),
                    MakeArgument("prefetch", prefetch)});
  };
  auto a = RunBatches(def(11, 1), 6);
  std::set<std::vector<int>> orders;
  for (const auto& b : a) {
    std::vector<int> ids = IdxIds(b);
    std::vector<int> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3, 4})) << "an epoch is not a permutation";
    orders.insert(ids);
  }
  EXPECT_GT(orders.size(), 1u) << "the order never changed between epochs";
  auto again = RunBatches(def(11, 0), 6);
  auto other = RunBatches(def(12, 1), 6);
  bool differs = false;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(IdxIds(a[i]), IdxIds(again[i])) << "same seed, batch " << i;
    differs |= IdxIds(a[i]) != IdxIds(other[i]);
  }
  EXPECT_TRUE(differs) << "another seed gave the same orders";
}

TEST_F(DataInputOpTest, EpochWrapAround) {
  const std::string ip = WriteIdx();
  Workspace ws;
  auto op = CreateOperator(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                                    MakeArgument("batch_size", 3), MakeArgument("shuffle", 0)},
                                   /*position=*/true),
                           &ws);
  const std::vector<std::vector<int>> want = {{0, 1, 2}, {3, 4, 0}, {1, 2, 3}, {4, 0, 1}};
  const std::vector<std::vector<int64_t>> pos = {{0, 0}, {0, 3}, {1, 1}, {1, 4}};
  for (size_t i = 0; i < want.size(); ++i) {
    Batch b = RunBatch(op.get(), &ws);
    EXPECT_EQ(IdxIds(b), want[i]) << "batch " << i;
    const Tensor& p = ws.GetTensor("position");
    EXPECT_EQ(std::vector<int64_t>(p.data<int64_t>(), p.data<int64_t>() + 2), pos[i]);
  }
  auto* dop = dynamic_cast<DataInputOp*>(op.get());
  ASSERT_NE(dop, nullptr);
  EXPECT_EQ(dop->GetState().epoch, 2);
  EXPECT_EQ(dop->GetState().index, 2);

  // Shuffled: every 5 consecutive samples of the stream form one epoch's permutation.
  auto batches = RunBatches(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                                     MakeArgument("batch_size", 3), MakeArgument("seed", 5)}),
                            5);
  std::vector<int> stream;
  for (const auto& b : batches) {
    auto ids = IdxIds(b);
    stream.insert(stream.end(), ids.begin(), ids.end());
  }
  for (int e = 0; e < 3; ++e) {
    std::vector<int> epoch(stream.begin() + e * kN, stream.begin() + (e + 1) * kN);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, (std::vector<int>{0, 1, 2, 3, 4})) << "epoch " << e;
  }
}

TEST_F(DataInputOpTest, StateSaveRestoreGivesIdenticalBatches) {
  const std::string ip = WriteIdx();
  for (int prefetch : {0, 1}) {
    auto def = [&](int seed) {
      return DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                      MakeArgument("batch_size", 3), MakeArgument("seed", seed),
                      MakeArgument("prefetch", prefetch)});
    };
    Workspace ws1;
    auto op1 = CreateOperator(def(21), &ws1);
    auto* d1 = dynamic_cast<DataInputOp*>(op1.get());
    ASSERT_NE(d1, nullptr);
    for (int i = 0; i < 4; ++i) RunBatch(op1.get(), &ws1);
    const DataReaderState saved = d1->GetState();
    EXPECT_EQ(saved.epoch, 2);
    EXPECT_EQ(saved.index, 2);
    EXPECT_EQ(saved.seed, 21u);
    std::vector<Batch> want;
    for (int i = 0; i < 5; ++i) want.push_back(RunBatch(op1.get(), &ws1));

    // A fresh op with another seed, restored from the saved state (through its vector form).
    Workspace ws2;
    auto op2 = CreateOperator(def(99), &ws2);
    auto* d2 = dynamic_cast<DataInputOp*>(op2.get());
    RunBatch(op2.get(), &ws2);
    // Let the worker prefetch a batch (from the old position): SetState must drop it.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    d2->SetState(DataReaderState::FromVector(saved.ToVector()));
    EXPECT_EQ(d2->GetState(), saved);
    for (int i = 0; i < 5; ++i) {
      Batch b = RunBatch(op2.get(), &ws2);
      EXPECT_EQ(b.data, want[i].data) << "prefetch " << prefetch << " batch " << i;
      EXPECT_EQ(b.labels, want[i].labels);
    }
  }
}

// Shards of one global batch: together exactly what one reader of the whole batch reads (also
// across epochs and with augmentation), disjoint, and at the same (global) position.
TEST_F(DataInputOpTest, ShardsSplitEachGlobalBatch) {
  const std::string ip = WriteIdx();
  for (bool augment : {false, true}) {
    auto def = [&](int64_t batch, int64_t shards, int64_t id) {
      std::vector<Argument> args{MakeArgument("source", ip), MakeArgument("format", "idx"),
                                 MakeArgument("batch_size", batch), MakeArgument("seed", 7),
                                 MakeArgument("num_shards", shards),
                                 MakeArgument("shard_id", id)};
      if (augment) {
        args.push_back(MakeArgument("pad", 1));
        args.push_back(MakeArgument("mirror", 1));
      }
      return DataDef(args);
    };
    Workspace whole_ws;
    auto whole = CreateOperator(def(6, 1, 0), &whole_ws);
    std::vector<Workspace> ws(3);
    std::vector<std::unique_ptr<OperatorBase>> shards;
    for (int i = 0; i < 3; ++i) shards.push_back(CreateOperator(def(2, 3, i), &ws[i]));
    for (int step = 0; step < 4; ++step) {
      const Batch want = RunBatch(whole.get(), &whole_ws);
      Batch got;
      for (int i = 0; i < 3; ++i) {
        const Batch b = RunBatch(shards[i].get(), &ws[i]);
        EXPECT_EQ(b.dims[0], 2);
        got.data.insert(got.data.end(), b.data.begin(), b.data.end());
        got.labels.insert(got.labels.end(), b.labels.begin(), b.labels.end());
        EXPECT_EQ(static_cast<DataInputOp*>(shards[i].get())->GetState(),
                  static_cast<DataInputOp*>(whole.get())->GetState());
      }
      EXPECT_EQ(got.data, want.data) << "augment " << augment << " step " << step;
      EXPECT_EQ(got.labels, want.labels);
    }
  }
  // Within one epoch (5 samples, global batch 4 of 2 shards) the shards' samples are disjoint.
  std::vector<Workspace> ws(2);
  std::vector<int> ids;
  for (int i = 0; i < 2; ++i) {
    auto op = CreateOperator(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                                      MakeArgument("batch_size", 2), MakeArgument("seed", 3),
                                      MakeArgument("num_shards", 2), MakeArgument("shard_id", i)}),
                             &ws[i]);
    const auto got = IdxIds(RunBatch(op.get(), &ws[i]));
    ids.insert(ids.end(), got.begin(), got.end());
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "a sample was read by two shards";
  for (auto bad : {std::vector<int64_t>{0, 0}, {2, 2}, {2, -1}}) {
    ExpectCreateFails(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                               MakeArgument("batch_size", 2), MakeArgument("num_shards", bad[0]),
                               MakeArgument("shard_id", bad[1])}),
                      {"num_shards", "shard_id"});
  }
}

TEST_F(DataInputOpTest, StateErrors) {
  const std::string ip = WriteIdx();
  Workspace ws;
  auto op = CreateOperator(DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                                    MakeArgument("batch_size", 2)}),
                           &ws);
  auto* d = dynamic_cast<DataInputOp*>(op.get());
  DataReaderState s;
  s.index = 6;
  ExpectThrowsWith([&] { d->SetState(s); }, {"index must be in [0, 5]"});
  ExpectThrowsWith([&] { DataReaderState::FromVector({1, 2}); }, {"3 values"});
}

TEST_F(DataInputOpTest, PrefetchOnAndOffGiveIdenticalBatches) {
  const std::string ip = WriteIdx(true, true);
  for (const char* order : {"NCHW", "NHWC"}) {
    auto idx = [&](int prefetch) {
      return DataDef({MakeArgument("source", ip), MakeArgument("format", "idx"),
                      MakeArgument("batch_size", 4), MakeArgument("seed", 8),
                      MakeArgument("order", order), MakeArgument("prefetch", prefetch)});
    };
    auto syn = [&](int prefetch) {
      return DataDef({MakeArgument("format", "synthetic"), MakeArgument("batch_size", 6),
                      MakeArgument("synthetic_shape", std::vector<int>{3, 5, 7}),
                      MakeArgument("num_classes", 4), MakeArgument("synthetic_count", 10),
                      MakeArgument("seed", 2), MakeArgument("order", order),
                      MakeArgument("dtype", "float16"), MakeArgument("prefetch", prefetch)});
    };
    for (const auto& make :
         {std::function<OperatorDef(int)>(idx), std::function<OperatorDef(int)>(syn)}) {
      auto off = RunBatches(make(0), 7);
      auto on = RunBatches(make(1), 7);
      for (int i = 0; i < 7; ++i) {
        EXPECT_EQ(on[i].dims, off[i].dims);
        EXPECT_EQ(on[i].data, off[i].data) << order << " batch " << i;
        EXPECT_EQ(on[i].labels, off[i].labels);
      }
    }
  }
}

TEST_F(DataInputOpTest, PrefetchShutsDownCleanly) {
  const std::string ip = WriteIdx();
  auto def = DataDef(
      {MakeArgument("source", ip), MakeArgument("format", "idx"), MakeArgument("batch_size", 2)});
  for (int runs = 0; runs < 3; ++runs) {
    Workspace ws;
    auto op = CreateOperator(def, &ws);
    for (int i = 0; i < runs; ++i) RunBatch(op.get(), &ws);
    op.reset();  // joins the worker, whether it is waiting or never started
  }
}

// Synthetic 1 x 6 x 7 samples (pixel levels as values: scale 1), without shuffling, so sample b of
// the first batch is sample b of the set; `extra` adds augmentation arguments.
OperatorDef AugmentDef(std::vector<Argument> extra, int prefetch = 0) {
  std::vector<Argument> args = {
      MakeArgument("format", "synthetic"), MakeArgument("batch_size", 40),
      MakeArgument("synthetic_shape", std::vector<int>{1, 6, 7}),
      MakeArgument("synthetic_count", 40), MakeArgument("seed", 3), MakeArgument("shuffle", 0),
      MakeArgument("scale", 1.f), MakeArgument("prefetch", prefetch)};
  for (auto& a : extra) args.push_back(a);
  return DataDef(args);
}

// The window (y0, x0) of sample `orig` (6 x 7) padded by `pad` with zeros, `ch` x `cw`, flipped
// left-right when `flip`.
std::vector<float> Window(const float* orig, int pad, int y0, int x0, int ch, int cw, bool flip) {
  std::vector<float> w;
  for (int y = 0; y < ch; ++y) {
    for (int x = 0; x < cw; ++x) {
      const int sy = y0 + y - pad, sx = x0 + (flip ? cw - 1 - x : x) - pad;
      w.push_back(sy >= 0 && sy < 6 && sx >= 0 && sx < 7 ? orig[sy * 7 + sx] : 0.f);
    }
  }
  return w;
}

TEST_F(DataInputOpTest, AugmentationCutsPaddedWindowsAndFlips) {
  const Batch orig = RunBatches(AugmentDef({}), 1)[0];
  const Batch aug = RunBatches(AugmentDef({MakeArgument("crop", 5), MakeArgument("pad", 2),
                                           MakeArgument("mirror", 1)}),
                               1)[0];
  ASSERT_EQ(aug.dims, (std::vector<int64_t>{40, 1, 5, 5}));
  EXPECT_EQ(aug.labels, orig.labels);
  std::set<std::vector<int>> seen;  // (y0, x0, flip) of each sample
  for (int b = 0; b < 40; ++b) {
    const std::vector<float> got(aug.data.begin() + b * 25, aug.data.begin() + (b + 1) * 25);
    bool found = false;
    for (int y0 = 0; y0 <= 5 && !found; ++y0) {
      for (int x0 = 0; x0 <= 6 && !found; ++x0) {
        for (bool flip : {false, true}) {
          if (Window(orig.data.data() + b * 42, 2, y0, x0, 5, 5, flip) == got) {
            seen.insert({y0, x0, flip ? 1 : 0});
            found = true;
            break;
          }
        }
      }
    }
    EXPECT_TRUE(found) << "sample " << b << " is no 5x5 window of the padded sample";
  }
  // Random windows and flips, not one fixed choice.
  EXPECT_GT(seen.size(), 10u);
  std::set<int> flips;
  for (const auto& s : seen) flips.insert(s[2]);
  EXPECT_EQ(flips.size(), 2u);

  // Evaluation: the centre window, never flipped.
  const Batch test = RunBatches(AugmentDef({MakeArgument("crop", 5), MakeArgument("pad", 2),
                                            MakeArgument("mirror", 1), MakeArgument("is_test", 1)}),
                                1)[0];
  for (int b = 0; b < 40; ++b) {
    const std::vector<float> got(test.data.begin() + b * 25, test.data.begin() + (b + 1) * 25);
    EXPECT_EQ(got, Window(orig.data.data() + b * 42, 2, 2, 3, 5, 5, false)) << "sample " << b;
  }
  // pad alone keeps the size and shifts.
  const Batch shifted = RunBatches(AugmentDef({MakeArgument("pad", 1)}), 1)[0];
  EXPECT_EQ(shifted.dims, (std::vector<int64_t>{40, 1, 6, 7}));
  EXPECT_NE(shifted.data, orig.data);
}

TEST_F(DataInputOpTest, AugmentationIsRepeatableAndChangesWithTheEpoch) {
  const std::vector<Argument> aug = {MakeArgument("crop", 4), MakeArgument("pad", 1),
                                     MakeArgument("mirror", 1), MakeArgument("order", "NHWC"),
                                     MakeArgument("dtype", "float16")};
  const auto off = RunBatches(AugmentDef(aug, 0), 3);
  const auto on = RunBatches(AugmentDef(aug, 1), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(on[i].data, off[i].data) << "prefetch changed batch " << i;
  }
  // Same samples in every epoch (no shuffle), other windows.
  EXPECT_EQ(off[0].labels, off[1].labels);
  EXPECT_NE(off[0].data, off[1].data);

  // A reader restored to the second batch's position draws the same windows.
  Workspace ws;
  auto first = CreateOperator(AugmentDef(aug), &ws);
  RunBatch(first.get(), &ws);
  const DataReaderState state = static_cast<DataInputOp*>(first.get())->GetState();
  Workspace ws2;
  auto second = CreateOperator(AugmentDef(aug), &ws2);
  static_cast<DataInputOp*>(second.get())->SetState(state);
  EXPECT_EQ(RunBatch(second.get(), &ws2).data, off[1].data);
}

TEST_F(DataInputOpTest, AugmentationArgumentErrors) {
  ExpectCreateFails(AugmentDef({MakeArgument("crop", 11)}), {"crop", "11", "6x7"});
  ExpectCreateFails(AugmentDef({MakeArgument("crop", 9), MakeArgument("pad", 1)}),
                    {"crop", "padded by 1"});
  ExpectCreateFails(AugmentDef({MakeArgument("pad", -1)}), {"pad", "-1"});
  ExpectCreateFails(AugmentDef({MakeArgument("crop", -2)}), {"crop", "-2"});
  // crop 9 fits 7 + 2 * 1.
  Workspace ws;
  EXPECT_NO_THROW(CreateOperator(AugmentDef({MakeArgument("crop", 9), MakeArgument("pad", 2)}),
                                 &ws));
}

TEST_F(DataInputOpTest, SyntheticShapeLabelsAndDeterminism) {
  auto def = [](int seed) {
    return DataDef({MakeArgument("format", "synthetic"), MakeArgument("batch_size", 16),
                    MakeArgument("synthetic_shape", std::vector<int>{3, 9, 11}),
                    MakeArgument("num_classes", 5), MakeArgument("seed", seed),
                    MakeArgument("shuffle", 0)});
  };
  auto a = RunBatches(def(4), 2);
  auto b = RunBatches(def(4), 2);
  auto c = RunBatches(def(5), 1);
  EXPECT_EQ(a[0].dims, (std::vector<int64_t>{16, 3, 9, 11}));
  EXPECT_EQ(a[0].data, b[0].data);
  EXPECT_EQ(a[1].labels, b[1].labels);
  EXPECT_NE(a[0].data, c[0].data);
  std::set<int32_t> seen;
  for (int32_t l : a[0].labels) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 5);
    seen.insert(l);
  }
  EXPECT_GT(seen.size(), 1u);
  for (float v : a[0].data) {
    EXPECT_GE(v, 0.f);
    EXPECT_LE(v, 1.f);
  }
  // Learnable: two samples of one class are closer to each other than to other classes.
  auto src = MakeSyntheticDataset({1, 16, 16}, 3, 64, 1);
  std::vector<std::vector<uint8_t>> px(64, std::vector<uint8_t>(256));
  for (int i = 0; i < 64; ++i) src->ReadSample(i, px[i].data());
  double same = 0, diff = 0;
  int ns = 0, nd = 0;
  for (int i = 0; i < 64; ++i) {
    for (int j = i + 1; j < 64; ++j) {
      double dist = 0;
      for (int k = 0; k < 256; ++k) dist += std::abs(px[i][k] - px[j][k]);
      if (src->Label(i) == src->Label(j)) {
        same += dist;
        ++ns;
      } else {
        diff += dist;
        ++nd;
      }
    }
  }
  ASSERT_GT(ns, 0);
  ASSERT_GT(nd, 0);
  EXPECT_LT(same / ns, 0.8 * diff / nd);
}

TEST_F(DataInputOpTest, ShapeInference) {
  const OpSchema* schema = OpSchemaRegistry::Schema("DataInput");
  ASSERT_NE(schema, nullptr);
  auto shapes =
      schema->InferShapes(DataDef({MakeArgument("source", "x"), MakeArgument("format", "cifar10"),
                                   MakeArgument("batch_size", 8), MakeArgument("order", "NHWC"),
                                   MakeArgument("dtype", "float16")},
                                  true),
                          {});
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].dims, (std::vector<int64_t>{8, 32, 32, 3}));
  EXPECT_EQ(shapes[0].dtype, DataType::FLOAT16);
  EXPECT_EQ(shapes[1].dims, (std::vector<int64_t>{8}));
  EXPECT_EQ(shapes[1].dtype, DataType::INT32);
  EXPECT_EQ(shapes[2].dtype, DataType::INT64);
  auto idx =
      schema->InferShapes(DataDef({MakeArgument("source", "x"), MakeArgument("format", "idx"),
                                   MakeArgument("batch_size", 8)}),
                          {});
  EXPECT_TRUE(idx[0].unknown);
  EXPECT_FALSE(idx[1].unknown);
  auto cropped =
      schema->InferShapes(DataDef({MakeArgument("source", "x"), MakeArgument("format", "cifar10"),
                                   MakeArgument("batch_size", 8), MakeArgument("crop", 28),
                                   MakeArgument("pad", 4)}),
                          {});
  EXPECT_EQ(cropped[0].dims, (std::vector<int64_t>{8, 3, 28, 28}));
}

TEST_F(DataInputOpTest, FileErrorsNameTheFile) {
  auto idx_def = [](const std::string& p) {
    return DataDef(
        {MakeArgument("source", p), MakeArgument("format", "idx"), MakeArgument("batch_size", 2)});
  };
  // Missing images file.
  const std::string missing = Path("nothing-images-idx3-ubyte.gz");
  ExpectCreateFails(idx_def(missing), {missing, "no such file"});

  // Missing labels file.
  const std::string lonely = Path("lonely-images-idx3-ubyte");
  WriteBytes(lonely, IdxBytes(0x803, {kN, kH, kW}, IdxImagePixels()), false);
  ExpectCreateFails(idx_def(lonely), {Path("lonely-labels-idx1-ubyte"), "no such file"});

  // Truncated images (raw), and a truncated gzip stream.
  auto full = IdxBytes(0x803, {kN, kH, kW}, IdxImagePixels());
  WriteBytes(Path("cut-labels-idx1-ubyte"), IdxBytes(0x801, {kN}, kIdxLabels), false);
  WriteBytes(Path("cut-images-idx3-ubyte"), std::vector<uint8_t>(full.begin(), full.end() - 5),
             false);
  ExpectCreateFails(idx_def(Path("cut-images-idx3-ubyte")),
                    {Path("cut-images-idx3-ubyte"), "truncated"});
  WriteBytes(Path("cut-images-idx3-ubyte.gz"), full, true);
  {
    std::ifstream in(Path("cut-images-idx3-ubyte.gz"), std::ios::binary);
    std::vector<char> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::ofstream out(Path("cut-images-idx3-ubyte.gz"), std::ios::binary | std::ios::trunc);
    out.write(gz.data(), static_cast<std::streamsize>(gz.size() / 2));
  }
  ExpectCreateFails(idx_def(Path("cut-images-idx3-ubyte.gz")),
                    {"error reading idx images file '" + Path("cut-images-idx3-ubyte.gz") + "'",
                     "truncated or corrupt"});
  // Short header.
  WriteBytes(Path("cut-images-idx3-ubyte"), {0, 0, 8, 3, 0, 0}, false);
  ExpectCreateFails(idx_def(Path("cut-images-idx3-ubyte")),
                    {Path("cut-images-idx3-ubyte"), "truncated"});

  // Wrong magic: a labels file given as images.
  WriteBytes(Path("bad-images-idx3-ubyte"), IdxBytes(0x801, {kN}, kIdxLabels), false);
  WriteBytes(Path("bad-labels-idx1-ubyte"), IdxBytes(0x801, {kN}, kIdxLabels), false);
  ExpectCreateFails(
      idx_def(Path("bad-images-idx3-ubyte")),
      {Path("bad-images-idx3-ubyte"), "wrong magic number 0x00000801", "expected 0x00000803"});
  // Wrong magic in the labels file.
  WriteBytes(Path("badl-images-idx3-ubyte"), full, false);
  WriteBytes(Path("badl-labels-idx1-ubyte"), IdxBytes(0x802, {kN}, kIdxLabels), false);
  ExpectCreateFails(idx_def(Path("badl-images-idx3-ubyte")),
                    {Path("badl-labels-idx1-ubyte"), "wrong magic number"});

  // Label count mismatch.
  WriteBytes(Path("mm-images-idx3-ubyte"), full, false);
  WriteBytes(Path("mm-labels-idx1-ubyte"), IdxBytes(0x801, {4}, {1, 2, 3, 4}), false);
  ExpectCreateFails(idx_def(Path("mm-images-idx3-ubyte")),
                    {"count mismatch", Path("mm-images-idx3-ubyte"), "5 images",
                     Path("mm-labels-idx1-ubyte"), "4 labels"});

  // Trailing bytes.
  auto longer = full;
  longer.push_back(0);
  WriteBytes(Path("long-images-idx3-ubyte"), longer, false);
  WriteBytes(Path("long-labels-idx1-ubyte"), IdxBytes(0x801, {kN}, kIdxLabels), false);
  ExpectCreateFails(idx_def(Path("long-images-idx3-ubyte")),
                    {Path("long-images-idx3-ubyte"), "1 unexpected bytes"});

  // A name that does not say where the labels are.
  WriteBytes(Path("pictures.bin"), full, false);
  ExpectCreateFails(idx_def(Path("pictures.bin")), {Path("pictures.bin"), "naming"});
  ExpectCreateFails(idx_def(dir_.string()), {dir_.string(), "is a folder"});

  // CIFAR-10: missing, truncated, bad label, empty folder.
  auto cifar_def = [](const std::string& p) {
    return DataDef({MakeArgument("source", p), MakeArgument("format", "cifar10"),
                    MakeArgument("batch_size", 2)});
  };
  ExpectCreateFails(cifar_def(Path("no_batch.bin")), {Path("no_batch.bin"), "no such file"});
  auto cif = CifarBytes(0, 2);
  WriteBytes(Path("short.bin"), std::vector<uint8_t>(cif.begin(), cif.end() - 1), false);
  ExpectCreateFails(cifar_def(Path("short.bin")), {Path("short.bin"), "truncated", "3073"});
  cif[3073] = 12;
  WriteBytes(Path("badlabel.bin"), cif, false);
  ExpectCreateFails(cifar_def(Path("badlabel.bin")),
                    {Path("badlabel.bin"), "record 1", "label 12"});
  fs::create_directories(dir_ / "empty");
  ExpectCreateFails(cifar_def(Path("empty")), {Path("empty"), "data_batch_"});
}

TEST_F(DataInputOpTest, BadArguments) {
  const std::string ip = WriteIdx();
  auto with = [&](std::vector<Argument> extra) {
    std::vector<Argument> args = {MakeArgument("source", ip), MakeArgument("format", "idx"),
                                  MakeArgument("batch_size", 2)};
    for (auto& a : extra) {
      args.erase(std::remove_if(args.begin(), args.end(),
                                [&](const Argument& b) { return b.name() == a.name(); }),
                 args.end());
      args.push_back(a);
    }
    return DataDef(args);
  };
  ExpectCreateFails(with({MakeArgument("format", "tfrecord")}), {"`format`", "tfrecord"});
  ExpectCreateFails(with({MakeArgument("batch_size", 0)}), {"`batch_size`", "0"});
  ExpectCreateFails(with({MakeArgument("order", "CHWN")}), {"`order`", "CHWN"});
  ExpectCreateFails(with({MakeArgument("dtype", "int32")}), {"`dtype`", "int32"});
  ExpectCreateFails(with({MakeArgument("std", 0.f)}), {"`std`"});
  ExpectCreateFails(with({MakeArgument("mean", std::vector<float>{1.f, 2.f})}),
                    {"`mean`", "1 or 1", "got 2"});
  ExpectCreateFails(with({MakeArgument("source", "")}), {"`source`"});
  ExpectCreateFails(DataDef({MakeArgument("format", "synthetic"), MakeArgument("batch_size", 2),
                             MakeArgument("synthetic_shape", std::vector<int>{28, 28})}),
                    {"`synthetic_shape`", "[28, 28]"});
  ExpectCreateFails(DataDef({MakeArgument("format", "synthetic"), MakeArgument("batch_size", 2),
                             MakeArgument("synthetic_shape", std::vector<int>{1, 2, 2}),
                             MakeArgument("num_classes", 0)}),
                    {"num_classes"});
}

TEST(DataInputRealDataTest, FashionMnistTrainSet) {
  const std::string images = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  if (!fs::exists(images)) GTEST_SKIP() << images << " not installed";
  auto src = LoadIdxDataset(images);
  ASSERT_EQ(src->size(), 60000);
  EXPECT_EQ(src->sample_dims(), (std::vector<int64_t>{1, 28, 28}));
  std::vector<int> count(10, 0);
  for (int64_t i = 0; i < src->size(); ++i) {
    const int32_t l = src->Label(i);
    ASSERT_GE(l, 0);
    ASSERT_LE(l, 9);
    ++count[l];
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(count[c], 6000) << "class " << c;
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
