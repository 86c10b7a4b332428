// DataInput: idx and CIFAR-10 values, scaling, float16 output, shuffling, epochs, exact resume,
// shards and prefetching.
#include "tests/operators/data_input_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

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

}  // namespace
}  // namespace testing
}  // namespace halfcaf
