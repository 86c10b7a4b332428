// ImageInput on DBs of small generated images (tests/util/image_test_util.h): output shapes and
// types, pixel values (PNG exact, JPEG within tolerance) against an independent computation of
// the crop, resizing, BGR order, grey, mirroring, random crops (range, variety, repeatability
// with a seed), mean/std, labels and wrap-around, raw BYTE records, and the errors.
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/net.h"
#include "core/operator.h"
#include "core/workspace.h"
#include "tests/util/image_test_util.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

using Records = std::vector<std::pair<std::string, std::string>>;

std::string Png(const image::Image& img) { return image::EncodePng(img); }
std::string Jpeg(const image::Image& img) { return image::EncodeJpeg(img, 100); }

// The expected output pixel (before normalization): the window of `src` at (y0, x0), mirrored.
// Bilinear resampling, written out independently of the op's implementation.
float ExpectedPixel(const image::Image& src, int out_h, int out_w, int y, int x, int c) {
  auto coord = [](int d, int n_in, int n_out, int* i0, int* i1, double* f) {
    double s = (d + 0.5) * n_in / n_out - 0.5;
    s = std::min(std::max(s, 0.0), static_cast<double>(n_in - 1));
    *i0 = static_cast<int>(std::floor(s));
    *i1 = std::min(*i0 + 1, n_in - 1);
    *f = s - *i0;
  };
  int y0, y1, x0, x1;
  double fy, fx;
  coord(y, src.height, out_h, &y0, &y1, &fy);
  coord(x, src.width, out_w, &x0, &x1, &fx);
  auto at = [&](int yy, int xx) {
    return static_cast<double>(src.pixels[(yy * src.width + xx) * src.channels + c]);
  };
  const double v = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                   fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
  return static_cast<float>(std::floor(v + 0.5));
}

class ImageInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    type_ = TestDBType();
    if (type_.empty()) GTEST_SKIP() << "built without LevelDB and LMDB";
    if (!HaveJpeg() || !HavePng()) GTEST_SKIP() << "built without JPEG or PNG support";
    path_ = dir_ / "db";
  }

  void Write(const Records& records) { WriteImageDB(type_, path_, records); }

  // CreateDB into `ws`, then an ImageInput op with `args` (plus a random_seed when >= 0).
  std::unique_ptr<OperatorBase> Open(Workspace* ws, std::vector<Argument> args, int seed = -1) {
    NetDef init;
    *init.add_op() = MakeOperatorDef("CreateDB", "", {}, {"reader"},
                                     {MakeArgument("db_type", type_), MakeArgument("db", path_)});
    ws->RunNetOnce(init);
    OperatorDef def = MakeOperatorDef("ImageInput", "", {"reader"}, {"data", "label"}, args);
    if (seed >= 0) def.mutable_device_option()->set_random_seed(static_cast<uint32_t>(seed));
    return CreateOperator(def, ws);
  }

  static std::vector<Argument> Args(int64_t batch, int crop, int scale, bool is_test,
                                    std::vector<Argument> extra = {}) {
    std::vector<Argument> a = {MakeArgument("batch_size", batch), MakeArgument("crop", crop),
                               MakeArgument("scale", scale),
                               MakeArgument("is_test", is_test ? 1 : 0)};
    for (auto& e : extra) a.push_back(e);
    return a;
  }

  // Error on construction or first run, containing every string in `needles`.
  void ExpectFails(std::vector<Argument> args, const std::vector<std::string>& needles,
                   bool with_input = true) {
    Workspace ws;
    try {
      if (with_input) {
        Open(&ws, args)->Run(0);
      } else {
        CreateOperator(MakeOperatorDef("ImageInput", "", {}, {"data", "label"}, args), &ws)
            ->Run(0);
      }
      ADD_FAILURE() << "expected an error containing '" << needles[0] << "'";
    } catch (const EnforceNotMet& e) {
      for (const auto& n : needles) {
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
            << "'" << n << "' not in: " << e.what();
      }
    }
  }

  ImageTempDir dir_;
  std::string type_, path_;
};

std::vector<float> Data(const Workspace& ws) { return ToFloatVector(ws.GetTensor("data")); }
std::vector<int32_t> Labels(const Workspace& ws) {
  const Tensor& t = ws.GetTensor("label");
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.numel());
}

TEST_F(ImageInputTest, ShapesTypesAndShapeInference) {
  Write(PatternRecords(4, 20, 30, Png));
  struct Case {
    std::vector<Argument> extra;
    std::vector<int64_t> dims;
    DataType dtype;
  };
  const std::vector<Case> cases = {
      {{}, {3, 16, 16, 3}, DataType::FLOAT},
      {{MakeArgument("color", 0)}, {3, 16, 16, 1}, DataType::FLOAT},
      {{MakeArgument("use_gpu_transform", 1)}, {3, 3, 16, 16}, DataType::FLOAT},
      {{MakeArgument("use_gpu_transform", 1), MakeArgument("output_type", std::string("float16"))},
       {3, 3, 16, 16},
       DataType::FLOAT16},
      // output_type applies to the GPU transform only, as in Caffe2.
      {{MakeArgument("output_type", std::string("float16"))}, {3, 16, 16, 3}, DataType::FLOAT},
  };
  for (const auto& c : cases) {
    Workspace ws;
    const std::vector<Argument> args = Args(3, 16, 20, false, c.extra);
    Open(&ws, args)->Run(0);
    const Tensor& data = ws.GetTensor("data");
    EXPECT_EQ(data.dims(), c.dims);
    EXPECT_EQ(data.dtype(), c.dtype);
    EXPECT_EQ(ws.GetTensor("label").dims(), (std::vector<int64_t>{3}));
    EXPECT_EQ(ws.GetTensor("label").dtype(), DataType::INT32);
    // The schema infers the same (for the form without an input: a DB reader input is not a
    // tensor, so its shape is unknown and so are the outputs'; the arguments decide).
    const OpSchema* schema = OpSchemaRegistry::Schema("ImageInput");
    ASSERT_NE(schema, nullptr);
    std::vector<Argument> own = args;
    own.push_back(MakeArgument("db", path_));
    const auto shapes =
        schema->InferShapes(MakeOperatorDef("ImageInput", "", {}, {"data", "label"}, own), {});
    ASSERT_EQ(shapes.size(), 2u);
    EXPECT_EQ(shapes[0].dims, c.dims);
    EXPECT_EQ(shapes[0].dtype, c.dtype);
    EXPECT_EQ(shapes[1].dims, (std::vector<int64_t>{3}));
    EXPECT_EQ(shapes[1].dtype, DataType::INT32);
  }
}

// is_test: centre crop, BGR order, no resizing when the shorter side already is `scale`: PNG
// gives the pattern exactly, JPEG within a few levels.
TEST_F(ImageInputTest, TestModeCentreCropValues) {
  const int h = 20, w = 30, crop = 12;
  for (bool png : {true, false}) {
    SCOPED_TRACE(png ? "PNG" : "JPEG");
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    Write(PatternRecords(3, h, w, png ? Png : Jpeg));
    Workspace ws;
    Open(&ws, Args(3, crop, h, true, {MakeArgument("mirror", 1)}))->Run(0);
    const std::vector<float> d = Data(ws);
    EXPECT_EQ(Labels(ws), (std::vector<int32_t>{0, 1, 2}));
    const int y0 = (h - crop) / 2, x0 = (w - crop) / 2;
    double max_err = 0, sum_err = 0;
    for (int n = 0; n < 3; ++n) {
      for (int y = 0; y < crop; ++y) {
        for (int x = 0; x < crop; ++x) {
          for (int c = 0; c < 3; ++c) {
            const float want = PatternValue(n, y0 + y, x0 + x, c);
            const float got = d[((n * crop + y) * crop + x) * 3 + c];
            if (png) {
              ASSERT_EQ(got, want) << "image " << n << " y " << y << " x " << x << " c " << c;
            }
            max_err = std::max(max_err, std::fabs(double(got) - want));
            sum_err += std::fabs(double(got) - want);
          }
        }
      }
    }
    const double mean_err = sum_err / (3.0 * crop * crop * 3);
    EXPECT_LE(max_err, png ? 0 : 8) << "mean error " << mean_err;
    EXPECT_LE(mean_err, png ? 0 : 2);
  }
}

// Resizing to `scale` (aspect kept, or warped) and the centre crop of the result, against an
// independent bilinear computation; grey images use Y = 0.299 R + 0.587 G + 0.114 B.
TEST_F(ImageInputTest, ResizesBilinearThenCrops) {
  const int h = 20, w = 30;
  Write(PatternRecords(2, h, w, Png));
  struct Case {
    int scale, crop;
    bool warp, grey;
    int out_h, out_w;
  };
  for (const Case& c : {Case{12, 10, false, false, 12, 18}, Case{12, 10, true, false, 12, 12},
                        Case{28, 24, false, false, 28, 42}, Case{13, 9, false, true, 13, 19}}) {
    SCOPED_TRACE(MakeString("scale ", c.scale, " warp ", c.warp, " grey ", c.grey));
    Workspace ws;
    Open(&ws, Args(2, c.crop, c.scale, true,
                   {MakeArgument("warp", c.warp ? 1 : 0), MakeArgument("color", c.grey ? 0 : 1)}))
        ->Run(0);
    const std::vector<float> d = Data(ws);
    const int C = c.grey ? 1 : 3;
    const int y0 = (c.out_h - c.crop) / 2, x0 = (c.out_w - c.crop) / 2;
    for (int n = 0; n < 2; ++n) {
      const image::Image src = PatternImage(n, h, w, C);
      for (int y = 0; y < c.crop; ++y) {
        for (int x = 0; x < c.crop; ++x) {
          for (int ch = 0; ch < C; ++ch) {
            const float want = ExpectedPixel(src, c.out_h, c.out_w, y0 + y, x0 + x, ch);
            const float got = d[((n * c.crop + y) * c.crop + x) * C + ch];
            // float rounding of the interpolation may land on the other side of .5
            ASSERT_NEAR(got, want, 1.f) << "image " << n << " y " << y << " x " << x;
          }
        }
      }
    }
  }
}

// minsize: images at least minsize are not resized; smaller ones are enlarged to it.
TEST_F(ImageInputTest, MinsizeOnlyEnlarges) {
  Write({{RecordKey(0), EncodedRecord(Png(PatternImage(0, 20, 30)), 0)},
         {RecordKey(1), EncodedRecord(Png(PatternImage(1, 10, 12)), 1)}});
  Workspace ws;
  Open(&ws, {MakeArgument("batch_size", int64_t{2}), MakeArgument("crop", 14),
             MakeArgument("minsize", 14), MakeArgument("is_test", 1)})
      ->Run(0);
  const std::vector<float> d = Data(ws);
  const image::Image big = PatternImage(0, 20, 30), small = PatternImage(1, 10, 12);
  for (int y = 0; y < 14; ++y) {
    for (int x = 0; x < 14; ++x) {
      for (int c = 0; c < 3; ++c) {
        // 20 x 30 kept: centre crop at (3, 8).
        ASSERT_EQ(d[(y * 14 + x) * 3 + c], PatternValue(0, 3 + y, 8 + x, c));
        // 10 x 12 enlarged to 14 x 16 (16 = 12 * 14 / 10 rounded down): crop at (0, 1).
        ASSERT_NEAR(d[((14 + y) * 14 + x) * 3 + c], ExpectedPixel(small, 14, 16, y, 1 + x, c),
                    1.f);
      }
    }
  }
  (void)big;
}

// Training with mirror: a crop as large as the image leaves only the mirroring random; each
// image is the pattern or its mirror image, and both happen.
TEST_F(ImageInputTest, MirrorFlipsLeftRight) {
  const int s = 16;
  Write(PatternRecords(8, s, s, Png));
  Workspace ws;
  auto op = Open(&ws, Args(8, s, s, false, {MakeArgument("mirror", 1)}), 3);
  int flipped = 0, plain = 0;
  for (int run = 0; run < 4; ++run) {
    op->Run(0);
    const std::vector<float> d = Data(ws);
    for (int n = 0; n < 8; ++n) {
      bool is_plain = true, is_flipped = true;
      for (int y = 0; y < s; ++y) {
        for (int x = 0; x < s; ++x) {
          for (int c = 0; c < 3; ++c) {
            const float got = d[((n * s + y) * s + x) * 3 + c];
            is_plain &= got == PatternValue(n, y, x, c);
            is_flipped &= got == PatternValue(n, y, s - 1 - x, c);
          }
        }
      }
      ASSERT_TRUE(is_plain || is_flipped) << "run " << run << " image " << n;
      plain += is_plain;
      flipped += is_flipped;
    }
  }
  EXPECT_GT(flipped, 4);
  EXPECT_GT(plain, 4);
  // Without mirror (and in test mode even with it) nothing is flipped.
  Workspace ws2;
  Open(&ws2, Args(8, s, s, false), 3)->Run(0);
  const std::vector<float> d = Data(ws2);
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(d[((n * s) * s + 0) * 3 + 0], PatternValue(n, 0, 0, 0)) << n;
  }
}

// Random crop positions: read back from the pattern; within range, varied, different between
// epochs; the same with the same seed (whatever decode_threads), different with another seed.
TEST_F(ImageInputTest, RandomCropsAreInRangeVariedAndSeeded) {
  const int h = 20, w = 30, crop = 12, n = 6;
  Write(PatternRecords(n, h, w, Png));
  auto offsets = [&](const std::vector<float>& d) {
    std::vector<std::pair<int, int>> out;
    for (int i = 0; i < n; ++i) {
      const float* p = &d[static_cast<size_t>(i) * crop * crop * 3];
      const int x0 = (static_cast<int>(p[0]) - 2 * i) / 6;
      const int y0 = (static_cast<int>(p[1]) - 2 * i) / 8;
      // The whole crop is the pattern at that offset.
      for (int y = 0; y < crop; ++y) {
        for (int x = 0; x < crop; ++x) {
          for (int c = 0; c < 3; ++c) {
            EXPECT_EQ(p[(y * crop + x) * 3 + c], PatternValue(i, y0 + y, x0 + x, c));
          }
        }
      }
      out.emplace_back(y0, x0);
    }
    return out;
  };
  auto run_epochs = [&](int seed, int threads) {
    Workspace ws;
    auto op = Open(&ws, Args(n, crop, h, false, {MakeArgument("decode_threads", threads)}), seed);
    std::vector<std::vector<std::pair<int, int>>> epochs;
    for (int e = 0; e < 3; ++e) {
      op->Run(0);
      epochs.push_back(offsets(Data(ws)));
    }
    return epochs;
  };
  const auto a = run_epochs(11, 4);
  std::set<int> ys, xs;
  for (const auto& epoch : a) {
    for (const auto& o : epoch) {
      EXPECT_GE(o.first, 0);
      EXPECT_LE(o.first, h - crop);
      EXPECT_GE(o.second, 0);
      EXPECT_LE(o.second, w - crop);
      ys.insert(o.first);
      xs.insert(o.second);
    }
  }
  EXPECT_GE(ys.size(), 4u);
  EXPECT_GE(xs.size(), 6u);
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(a[1], a[2]);
  EXPECT_EQ(run_epochs(11, 1), a);
  EXPECT_NE(run_epochs(12, 4), a);
}

TEST_F(ImageInputTest, MeanAndStdPerChannel) {
  Write(PatternRecords(2, 20, 30, Jpeg));
  Workspace raw_ws, ws, scalar_ws;
  Open(&raw_ws, Args(2, 12, 20, true))->Run(0);
  Open(&ws, Args(2, 12, 20, true,
                 {MakeArgument("mean_per_channel", std::vector<float>{10.f, 20.f, 30.f}),
                  MakeArgument("std_per_channel", std::vector<float>{2.f, 4.f, 0.5f})}))
      ->Run(0);
  Open(&scalar_ws,
       Args(2, 12, 20, true, {MakeArgument("mean", 128.f), MakeArgument("std", 64.f)}))
      ->Run(0);
  const std::vector<float> raw = Data(raw_ws), d = Data(ws), s = Data(scalar_ws);
  const float mean[3] = {10, 20, 30}, stdev[3] = {2, 4, 0.5f};
  ASSERT_EQ(raw.size(), d.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    ASSERT_NEAR(d[i], (raw[i] - mean[i % 3]) / stdev[i % 3], 1e-5f) << i;
    ASSERT_NEAR(s[i], (raw[i] - 128.f) / 64.f, 1e-6f) << i;
  }
  // The GPU-transform layout (computed on the host on CPU): NCHW of the same values.
  for (const char* type : {"float", "float16"}) {
    Workspace nchw;
    Open(&nchw, Args(2, 12, 20, true,
                     {MakeArgument("mean_per_channel", std::vector<float>{10.f, 20.f, 30.f}),
                      MakeArgument("std_per_channel", std::vector<float>{2.f, 4.f, 0.5f}),
                      MakeArgument("use_gpu_transform", 1),
                      MakeArgument("output_type", std::string(type))}))
        ->Run(0);
    const std::vector<float> t = Data(nchw);
    const bool half = std::string(type) == "float16";
    for (int n = 0; n < 2; ++n) {
      for (int c = 0; c < 3; ++c) {
        for (int p = 0; p < 144; ++p) {
          const float want = d[(n * 144 + p) * 3 + c];
          ASSERT_NEAR(t[(n * 3 + c) * 144 + p], want, half ? 1e-3f * (1 + std::fabs(want)) : 0)
              << type;
        }
      }
    }
  }
}

// Labels follow the records; a batch that runs past the end continues from the first record;
// the op can open its own reader (args db, db_type) instead of taking one.
TEST_F(ImageInputTest, LabelsWrapAroundAndOwnReader) {
  Records recs;
  for (int i = 0; i < 5; ++i) {
    recs.emplace_back(RecordKey(i), EncodedRecord(Png(PatternImage(i, 16, 16)), 100 + i));
  }
  Write(recs);
  Workspace ws;
  auto op = Open(&ws, Args(3, 16, 16, true));
  const std::vector<std::vector<int32_t>> want = {{100, 101, 102}, {103, 104, 100},
                                                  {101, 102, 103}};
  for (const auto& labels : want) {
    op->Run(0);
    EXPECT_EQ(Labels(ws), labels);
  }
  // The image follows its record: image 4 is the second of batch 2.
  Workspace own;
  std::vector<Argument> args = Args(3, 16, 16, true);
  args.push_back(MakeArgument("db", path_));
  args.push_back(MakeArgument("db_type", type_));
  auto own_op = CreateOperator(MakeOperatorDef("ImageInput", "", {}, {"data", "label"}, args),
                               &own);
  own_op->Run(0);
  own_op->Run(0);
  EXPECT_EQ(Labels(own), (std::vector<int32_t>{103, 104, 100}));
  const std::vector<float> d = Data(own);
  EXPECT_EQ(d[16 * 16 * 3 + 0], PatternValue(4, 0, 0, 0));
  EXPECT_EQ(d[16 * 16 * 3 + 1], PatternValue(4, 0, 0, 1));
  // Sharded: shard 1 of 2 reads records 1, 3, 0 (wrapping to its first record, 1).
  Workspace sharded;
  args.push_back(MakeArgument("num_shards", 2));
  args.push_back(MakeArgument("shard_id", 1));
  CreateOperator(MakeOperatorDef("ImageInput", "", {}, {"data", "label"}, args), &sharded)
      ->Run(0);
  EXPECT_EQ(Labels(sharded), (std::vector<int32_t>{101, 103, 101}));
}

// Raw BYTE records: (H, W, 3) BGR kept as stored, (H, W) grey (make_mnist_db's layout is
// (H, W, 1)), converted to the channels asked for.
TEST_F(ImageInputTest, RawByteRecords) {
  const image::Image colour = PatternImage(1, 14, 18);
  const image::Image grey = PatternImage(2, 14, 18, 1);
  Write({{RecordKey(0), RawRecord(colour, 7)},
         {RecordKey(1), RawRecord(grey, 8, /*hw_only=*/true)},
         {RecordKey(2), RawRecord(grey, 9)}});
  Workspace ws, grey_ws;
  Open(&ws, Args(3, 14, 14, true))->Run(0);
  Open(&grey_ws, Args(3, 14, 14, true, {MakeArgument("color", 0)}))->Run(0);
  EXPECT_EQ(Labels(ws), (std::vector<int32_t>{7, 8, 9}));
  const std::vector<float> d = Data(ws), g = Data(grey_ws);
  for (int y = 0; y < 14; ++y) {
    for (int x = 0; x < 14; ++x) {
      const int sx = x + 2;  // centre crop of 18 columns
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(d[(y * 14 + x) * 3 + c], colour.pixels[(y * 18 + sx) * 3 + c]);
        ASSERT_EQ(d[((14 + y) * 14 + x) * 3 + c], grey.pixels[y * 18 + sx]);
      }
      const uint8_t* bgr = &colour.pixels[(y * 18 + sx) * 3];
      ASSERT_EQ(g[y * 14 + x], image::GreyFromBGR(bgr[0], bgr[1], bgr[2]));
      ASSERT_EQ(g[14 * 14 + y * 14 + x], grey.pixels[y * 18 + sx]);
      ASSERT_EQ(g[2 * 14 * 14 + y * 14 + x], grey.pixels[y * 18 + sx]);
    }
  }
}

// use_caffe_datum = 1: Caffe Datum records (encoded files, raw channel-major pixels) give exactly
// what the same images as TensorProtos records give, random crops and mirroring included.
TEST_F(ImageInputTest, CaffeDatumRecordsMatchTensorProtosRecords) {
  std::vector<image::Image> imgs = {PatternImage(0, 20, 24), PatternImage(1, 18, 22),
                                    PatternImage(2, 21, 19), PatternImage(3, 20, 20, 1)};
  const std::string jpeg = Jpeg(imgs[0]), png = Png(imgs[1]);
  const std::string datum_path = dir_ / "datum_db";
  WriteImageDB(type_, datum_path,
               {{RecordKey(0), DatumRecord(imgs[0], 10, jpeg)},
                {RecordKey(1), DatumRecord(imgs[1], 11, png)},
                {RecordKey(2), DatumRecord(imgs[2], 12)},
                {RecordKey(3), DatumRecord(imgs[3], 13)}});
  Write({{RecordKey(0), EncodedRecord(jpeg, 10)},
         {RecordKey(1), EncodedRecord(png, 11)},
         {RecordKey(2), RawRecord(imgs[2], 12)},
         {RecordKey(3), RawRecord(imgs[3], 13)}});
  const std::vector<Argument> extra = {MakeArgument("mirror", 1)};
  Workspace protos_ws;
  auto from_protos = Open(&protos_ws, Args(4, 16, 18, false, extra), 5);
  Workspace datum_ws;
  const std::string saved = path_;
  path_ = datum_path;
  std::vector<Argument> datum_args = Args(4, 16, 18, false, extra);
  datum_args.push_back(MakeArgument("use_caffe_datum", 1));
  auto from_datum = Open(&datum_ws, datum_args, 5);
  path_ = saved;
  for (int run = 0; run < 3; ++run) {
    from_protos->Run(0);
    from_datum->Run(0);
    EXPECT_EQ(Labels(datum_ws), (std::vector<int32_t>{10, 11, 12, 13}));
    EXPECT_EQ(Data(datum_ws), Data(protos_ws)) << "run " << run;
  }

  // Bad Datum records name the record and the problem.
  Datum floats;
  floats.add_float_data(1.f);
  std::string floats_value, short_value;
  floats.SerializeToString(&floats_value);
  Datum short_raw;
  short_raw.set_channels(3);
  short_raw.set_height(4);
  short_raw.set_width(4);
  short_raw.set_data(std::string(47, '\0'));
  short_raw.SerializeToString(&short_value);
  for (const auto& bad : std::vector<std::pair<std::string, std::string>>{
           {floats_value, "float_data"}, {short_value, "47 bytes of data, expected 3 x 4 x 4"}}) {
    path_ = dir_ / ("bad_datum_" + std::to_string(bad.first.size()));
    WriteImageDB(type_, path_, {{"bad_key", bad.first}});
    ExpectFails(Args(1, 2, 4, true, {MakeArgument("use_caffe_datum", 1)}),
                {"record 'bad_key'", bad.second});
  }
  path_ = saved;
}

// color = 0 on colour files: JPEG's own luma, and for PNG our Y formula.
TEST_F(ImageInputTest, GreyFromColourFiles) {
  const image::Image src = PatternImage(3, 16, 16);
  Write({{RecordKey(0), EncodedRecord(Png(src), 0)}, {RecordKey(1), EncodedRecord(Jpeg(src), 1)}});
  Workspace ws;
  Open(&ws, Args(2, 16, 16, true, {MakeArgument("color", 0)}))->Run(0);
  EXPECT_EQ(ws.GetTensor("data").dims(), (std::vector<int64_t>{2, 16, 16, 1}));
  const std::vector<float> d = Data(ws);
  for (int p = 0; p < 256; ++p) {
    const uint8_t* bgr = &src.pixels[p * 3];
    const float want = image::GreyFromBGR(bgr[0], bgr[1], bgr[2]);
    ASSERT_EQ(d[p], want) << p;
    ASSERT_NEAR(d[256 + p], want, 6.f) << p;
  }
}

TEST_F(ImageInputTest, BadArgumentsFail) {
  Write(PatternRecords(2, 16, 16, Png));
  auto base = [] {
    return std::vector<Argument>{MakeArgument("batch_size", int64_t{2}), MakeArgument("crop", 8),
                                 MakeArgument("scale", 16)};
  };
  auto with = [&](std::vector<Argument> extra) {
    std::vector<Argument> a = base();
    for (auto& e : extra) a.push_back(e);
    return a;
  };
  ExpectFails({MakeArgument("batch_size", int64_t{2}), MakeArgument("scale", 16)}, {"'crop'"});
  ExpectFails({MakeArgument("crop", 8), MakeArgument("scale", 16)}, {"'batch_size'", "> 0"});
  ExpectFails({MakeArgument("batch_size", int64_t{2}), MakeArgument("crop", 8)},
              {"'scale'", "'minsize'"});
  ExpectFails(with({MakeArgument("minsize", 16)}), {"exactly one", "'minsize'"});
  ExpectFails({MakeArgument("batch_size", int64_t{2}), MakeArgument("crop", 8),
               MakeArgument("scale", 6)},
              {"'scale' = 6", "crop = 8"});
  ExpectFails(with({MakeArgument("color", 2)}), {"'color'", "got 2"});
  ExpectFails(with({MakeArgument("label_type", 1)}), {"'label_type' = 1", "not supported"});
  // TensorProtos records read as Caffe Datum records.
  ExpectFails(with({MakeArgument("use_caffe_datum", 1)}), {"raw Datum needs channels 1 or 3"});
  ExpectFails(with({MakeArgument("mean_per_channel", std::vector<float>{1.f, 2.f})}),
              {"'mean_per_channel'", "1 or 3"});
  ExpectFails(with({MakeArgument("std", 0.f)}), {"'std'", "non-zero"});
  ExpectFails(with({MakeArgument("output_type", std::string("int32"))}), {"'output_type'"});
  ExpectFails(with({MakeArgument("decode_threads", 0)}), {"'decode_threads'"});
  ExpectFails(with({MakeArgument("color_jitter", 1)}), {"'color_jitter'", "not supported"});
  ExpectFails(with({MakeArgument("random_scale", std::vector<int>{16, 24})}),
              {"'random_scale'"});
  ExpectFails(base(), {"needs the argument 'db'"}, /*with_input=*/false);
  ExpectFails(with({MakeArgument("db", dir_ / "missing"), MakeArgument("db_type", type_)}),
              {"missing", "ImageInput opening its own DB reader"}, /*with_input=*/false);
  // Input 0 is a tensor, not a DB reader.
  Workspace ws;
  SetInput(&ws, "reader", FloatTensor({1}, {0.f}));
  try {
    CreateOperator(MakeOperatorDef("ImageInput", "", {"reader"}, {"data", "label"}, base()), &ws)
        ->Run(0);
    ADD_FAILURE() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("not a DB reader"), std::string::npos) << e.what();
  }
}

TEST_F(ImageInputTest, BadRecordsFailNamingTheKey) {
  auto fails_on = [&](const std::string& record, const std::vector<std::string>& needles) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    // A good record first: the bad one is found in the middle of a batch.
    Write({{RecordKey(0), EncodedRecord(Png(PatternImage(0, 16, 16)), 0)},
           {"bad_key", record}});
    std::vector<std::string> all = needles;
    all.push_back("record 'bad_key'");
    ExpectFails({MakeArgument("batch_size", int64_t{2}), MakeArgument("crop", 8),
                 MakeArgument("scale", 16)},
                all);
  };
  fails_on("not a proto \xff\xff\xff", {"not a serialized TensorProtos"});
  std::string jpeg = Jpeg(PatternImage(1, 16, 16));
  fails_on(EncodedRecord(jpeg.substr(0, 40), 1), {"cannot decode the JPEG image"});
  fails_on(EncodedRecord("GIF89a....", 1), {"not a JPEG or PNG image"});
  std::string png = Png(PatternImage(1, 16, 16));
  png[20] ^= 0x5a;  // corrupt the IHDR chunk (CRC mismatch)
  fails_on(EncodedRecord(png, 1), {"cannot decode the PNG image"});
  {
    TensorProtos p;
    p.add_protos()->set_data_type(TensorProto::STRING);
    p.mutable_protos(0)->add_string_data(Png(PatternImage(1, 16, 16)));
    std::string s;
    p.SerializeToString(&s);
    fails_on(s, {"holds 1 tensor(s)", "needs 2"});
  }
  {
    TensorProtos p;
    p.ParseFromString(EncodedRecord(Png(PatternImage(1, 16, 16)), 1));
    p.mutable_protos(1)->set_data_type(TensorProto::FLOAT);
    p.mutable_protos(1)->clear_int32_data();
    p.mutable_protos(1)->add_float_data(1.f);
    std::string s;
    p.SerializeToString(&s);
    fails_on(s, {"tensor 1 (the label) must be INT32"});
  }
  {
    TensorProtos p;
    p.ParseFromString(RawRecord(PatternImage(1, 16, 16), 1));
    p.mutable_protos(0)->set_data_type(TensorProto::FLOAT);
    std::string s;
    p.SerializeToString(&s);
    fails_on(s, {"has type float", "STRING", "BYTE"});
  }
  {
    TensorProtos p;
    p.ParseFromString(RawRecord(PatternImage(1, 16, 16), 1));
    p.mutable_protos(0)->set_dims(2, 4);
    std::string s;
    p.SerializeToString(&s);
    fails_on(s, {"dims (H, W) or (H, W, C)", "[16, 16, 4]"});
  }
  {
    TensorProtos p;
    p.ParseFromString(RawRecord(PatternImage(1, 16, 16), 1));
    p.mutable_protos(0)->set_dims(0, 15);
    std::string s;
    p.SerializeToString(&s);
    fails_on(s, {"768 bytes, expected 15 x 16 x 3"});
  }
}

// ---- prefetching ---------------------------------------------------------------------------

// The outputs (data as float, labels) of one run, or its error, as one string.
std::string RunAndDescribe(OperatorBase* op, const Workspace& ws) {
  try {
    op->Run(0);
  } catch (const EnforceNotMet& e) {
    return std::string("error: ") + e.what();
  }
  const std::vector<float> d = Data(ws);
  const std::vector<int32_t> l = Labels(ws);
  return ws.GetTensor("data").DebugString() + std::string(reinterpret_cast<const char*>(d.data()),
                                                          d.size() * sizeof(float)) +
         std::string(reinterpret_cast<const char*>(l.data()), l.size() * sizeof(int32_t));
}

// Random crops and mirroring with a seed: the same batches with and without prefetching, reading
// CreateDB's reader (run again before run 5: the prefetched batch is dropped, and its draws with
// it) or the op's own; past the end of the DB; NHWC and the float16 NCHW layout.
TEST_F(ImageInputTest, PrefetchGivesTheSameBatchesAndDraws) {
  const int n = 5, h = 20, w = 30, crop = 12;
  Write(PatternRecords(n, h, w, Png));
  for (bool own : {false, true}) {
    for (bool nchw : {false, true}) {
      SCOPED_TRACE(MakeString(own ? "own reader" : "CreateDB reader", nchw ? ", NCHW" : ""));
      std::vector<std::string> seen[2];
      for (bool no_prefetch : {false, true}) {
        std::vector<Argument> args = Args(3, crop, h, false, {MakeArgument("mirror", 1)});
        if (no_prefetch) args.push_back(MakeArgument("no_prefetch", true));
        if (nchw) {
          args.push_back(MakeArgument("use_gpu_transform", 1));
          args.push_back(MakeArgument("output_type", std::string("float16")));
        }
        Workspace ws;
        std::unique_ptr<OperatorBase> op;
        if (own) {
          args.push_back(MakeArgument("db", path_));
          args.push_back(MakeArgument("db_type", type_));
          OperatorDef def = MakeOperatorDef("ImageInput", "", {}, {"data", "label"}, args);
          def.mutable_device_option()->set_random_seed(7);
          op = CreateOperator(def, &ws);
        } else {
          op = Open(&ws, args, 7);
        }
        for (int run = 0; run < 7; ++run) {
          if (run == 5 && !own) {
            NetDef again;
            *again.add_op() = MakeOperatorDef(
                "CreateDB", "", {}, {"reader"},
                {MakeArgument("db_type", type_), MakeArgument("db", path_)});
            ws.RunNetOnce(again);
          }
          seen[no_prefetch].push_back(RunAndDescribe(op.get(), ws));
          const int first = (run >= 5 && !own ? run - 5 : run) * 3;
          EXPECT_EQ(Labels(ws), (std::vector<int32_t>{first % n, (first + 1) % n, (first + 2) % n}))
              << run;
        }
      }
      ASSERT_EQ(seen[0].size(), 7u);
      EXPECT_EQ(seen[0], seen[1]);
      EXPECT_NE(seen[0][0], seen[0][5]);  // random: the same labels, other crops
    }
  }
}

// A bad record fails the run that consumes its batch, with the same message as without
// prefetching, and the runs after it continue as without prefetching.
TEST_F(ImageInputTest, PrefetchErrorsSurfaceAtTheConsumingRun) {
  Records recs = PatternRecords(5, 16, 16, Png);
  recs[3].second = EncodedRecord("GIF89a....", 3);
  Write(recs);
  std::vector<std::string> seen[2];
  for (bool no_prefetch : {false, true}) {
    std::vector<Argument> args = Args(2, 12, 16, false, {MakeArgument("mirror", 1)});
    if (no_prefetch) args.push_back(MakeArgument("no_prefetch", true));
    Workspace ws;
    auto op = Open(&ws, args, 5);
    for (int run = 0; run < 6; ++run) seen[no_prefetch].push_back(RunAndDescribe(op.get(), ws));
  }
  EXPECT_EQ(seen[0], seen[1]);
  for (int run = 0; run < 6; ++run) {
    // Batches {0, 1}, {2, 3} fails, {4, 0}, {1, 2}, {3, 4} fails, {0, 1}.
    const bool fails = run == 1 || run == 4;
    EXPECT_EQ(seen[0][run].rfind("error: ", 0) == 0, fails) << run << ": " << seen[0][run];
  }
  EXPECT_NE(seen[0][1].find("record '" + recs[3].first + "'"), std::string::npos) << seen[0][1];
  EXPECT_NE(seen[0][1].find("not a JPEG or PNG image"), std::string::npos) << seen[0][1];
}

// Destroying the op, or the workspace and then the op, while a batch is being decoded: no hang,
// no crash; the DB is closed afterwards (it opens again).
TEST_F(ImageInputTest, DestroyWhilePrefetching) {
  Write(PatternRecords(8, 48, 64, Jpeg));
  for (int i = 0; i < 12; ++i) {
    auto ws = std::make_unique<Workspace>();
    auto op = Open(ws.get(), Args(16, 32, 48, false, {MakeArgument("mirror", 1)}), i);
    op->Run(0);
    if (i % 3 == 0) ws.reset();  // the worker may still hold the reader
    if (i % 3 == 1) op->Run(0);
    op.reset();
    ws.reset();
  }
  db::DBReader reader(type_, path_);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
