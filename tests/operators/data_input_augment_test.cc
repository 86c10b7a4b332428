// DataInput: augmentation (pad, crop, mirror), synthetic data, shape inference, and the errors bad
// files and arguments get; the real Fashion-MNIST set when installed.
#include "tests/operators/data_input_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

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
