// make_image_db: a list of PNG / JPEG files becomes a DB that ImageInput reads back (records,
// keys, labels, stored bytes, resizing, grey, raw pixels, shuffling), bad inputs exit 1 with a
// clear message; and end to end, 64 Fashion-MNIST images written as PNG files go through
// make_image_db, then a small Caffe2-style net (CreateDB, ImageInput, NHWC2NCHW, Conv, Relu,
// MaxPool, FC, SoftmaxWithLoss, with Backward and momentum SGD) trains on them.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "models/backward.h"
#include "models/model_helper.h"
#include "models/optimizer.h"
#include "data/dataset_reader.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/image_test_util.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;

void WriteFile(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

struct StoredRecord {
  std::string key;
  TensorProtos protos;
};

std::vector<StoredRecord> ReadAll(const std::string& type, const std::string& path) {
  std::unique_ptr<db::DB> d = db::OpenDB(type, path, db::Mode::READ);
  std::unique_ptr<db::Cursor> c = d->NewCursor();
  std::vector<StoredRecord> out;
  for (c->SeekToFirst(); c->Valid(); c->Next()) {
    out.emplace_back();
    out.back().key = c->key();
    EXPECT_TRUE(out.back().protos.ParseFromString(c->value())) << c->key();
  }
  return out;
}

class MakeImageDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    type_ = TestDBType();
    if (type_.empty()) GTEST_SKIP() << "built without LevelDB and LMDB";
    if (!HaveJpeg() || !HavePng()) GTEST_SKIP() << "built without JPEG or PNG support";
    images_ = dir_ / "images";
    // Images 0..3: PNG 16 x 16, JPEG 16 x 16, PNG 20 x 30 (in a subfolder), JPEG 24 x 16.
    files_ = {"a.png", "b.jpg", "sub/c.png", "d.jpg"};
    sizes_ = {{16, 16}, {16, 16}, {20, 30}, {24, 16}};
    for (int i = 0; i < 4; ++i) {
      const image::Image img = PatternImage(i, sizes_[i].first, sizes_[i].second);
      bytes_.push_back(files_[i].find(".png") != std::string::npos ? image::EncodePng(img)
                                                                   : image::EncodeJpeg(img, 95));
      WriteFile(images_ + "/" + files_[i], bytes_.back());
    }
    list_ = dir_ / "list.txt";
    WriteFile(list_, "a.png 3\nb.jpg   7\n\nsub/c.png\t1\nd.jpg 0\n");
  }

  ToolResult Make(const std::string& db, const std::string& extra) {
    return RunTool("make_image_db", "--input_folder " + images_ + " --list_file " + list_ +
                                        " --output_db_name " + db + " --db " + type_ + " " +
                                        extra);
  }

  ImageTempDir dir_;
  std::string type_, images_, list_;
  std::vector<std::string> files_, bytes_;
  std::vector<std::pair<int, int>> sizes_;
};

TEST_F(MakeImageDbTest, StoresFilesAsGivenAndImageInputReadsThem) {
  const std::string db = dir_ / "db";
  ToolResult r = Make(db, "--scale 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 4 records"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 stored as given, 0 re-encoded"), std::string::npos) << r.out;
  const std::vector<StoredRecord> recs = ReadAll(type_, db);
  ASSERT_EQ(recs.size(), 4u);
  const int labels[4] = {3, 7, 1, 0};
  for (int i = 0; i < 4; ++i) {
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "%08d_", i);
    EXPECT_EQ(recs[i].key, prefix + files_[i]);
    ASSERT_EQ(recs[i].protos.protos_size(), 2);
    const TensorProto& img = recs[i].protos.protos(0);
    EXPECT_EQ(img.data_type(), TensorProto::STRING);
    ASSERT_EQ(img.string_data_size(), 1);
    EXPECT_EQ(img.string_data(0), bytes_[i]) << "record " << i << ": the file's bytes";
    const TensorProto& label = recs[i].protos.protos(1);
    EXPECT_EQ(label.data_type(), TensorProto::INT32);
    ASSERT_EQ(label.int32_data_size(), 1);
    EXPECT_EQ(label.int32_data(0), labels[i]);
  }
  // ImageInput: centre crops of the stored images (no resizing: minsize below every side).
  Workspace ws;
  NetDef init;
  *init.add_op() = MakeOperatorDef("CreateDB", "", {}, {"reader"},
                                   {MakeArgument("db_type", type_), MakeArgument("db", db)});
  ws.RunNetOnce(init);
  CreateOperator(MakeOperatorDef("ImageInput", "", {"reader"}, {"data", "label"},
                                 {MakeArgument("batch_size", int64_t{4}), MakeArgument("crop", 16),
                                  MakeArgument("minsize", 16), MakeArgument("is_test", 1)}),
                 &ws)
      ->Run(0);
  const Tensor& label = ws.GetTensor("label");
  EXPECT_EQ(std::vector<int32_t>(label.data<int32_t>(), label.data<int32_t>() + 4),
            (std::vector<int32_t>{3, 7, 1, 0}));
  const std::vector<float> d = ToFloatVector(ws.GetTensor("data"));
  for (int i = 0; i < 4; ++i) {
    const int y0 = (sizes_[i].first - 16) / 2, x0 = (sizes_[i].second - 16) / 2;
    const bool png = files_[i].find(".png") != std::string::npos;
    for (int p = 0; p < 256 * 3; ++p) {
      const int y = p / 48, x = (p / 3) % 16, c = p % 3;
      ASSERT_NEAR(d[i * 768 + p], PatternValue(i, y0 + y, x0 + x, c), png ? 0.f : 10.f)
          << "image " << i << " y " << y << " x " << x << " c " << c;
    }
  }
}

// --scale resizes (and re-encodes as JPEG) only the images whose shorter side differs; --color
// false stores grey; --raw stores pixels; --shuffle changes the order, not the set.
TEST_F(MakeImageDbTest, ScaleColorRawAndShuffle) {
  {
    const std::string db = dir_ / "scaled";
    ToolResult r = Make(db, "--scale 16");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("3 stored as given, 1 re-encoded as JPEG"), std::string::npos) << r.out;
    const std::vector<StoredRecord> recs = ReadAll(type_, db);
    ASSERT_EQ(recs.size(), 4u);
    const std::pair<int, int> want[4] = {{16, 16}, {16, 16}, {16, 24}, {24, 16}};
    for (int i = 0; i < 4; ++i) {
      const std::string& s = recs[i].protos.protos(0).string_data(0);
      if (i != 2) {
        EXPECT_EQ(s, bytes_[i]) << i;  // already 16 on the shorter side
      }
      image::Image img;
      image::Decode(s.data(), s.size(), 3, &img);
      EXPECT_EQ(img.height, want[i].first) << i;
      EXPECT_EQ(img.width, want[i].second) << i;
    }
    EXPECT_EQ(image::DetectFormat(recs[2].protos.protos(0).string_data(0).data(), 8),
              image::Format::JPEG);
  }
  {
    const std::string db = dir_ / "grey";
    ToolResult r = Make(db, "--scale 0 --color=false");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& rec : ReadAll(type_, db)) {
      const std::string& s = rec.protos.protos(0).string_data(0);
      image::Image img;
      image::Decode(s.data(), s.size(), 3, &img);
      for (size_t p = 0; p < img.pixels.size(); p += 3) {
        ASSERT_EQ(img.pixels[p], img.pixels[p + 1]) << rec.key;
        ASSERT_EQ(img.pixels[p], img.pixels[p + 2]) << rec.key;
      }
    }
  }
  {
    const std::string db = dir_ / "raw";
    ToolResult r = Make(db, "--scale 0 --raw");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<StoredRecord> recs = ReadAll(type_, db);
    ASSERT_EQ(recs.size(), 4u);
    const TensorProto& img = recs[2].protos.protos(0);
    EXPECT_EQ(img.data_type(), TensorProto::BYTE);
    EXPECT_EQ(std::vector<int64_t>(img.dims().begin(), img.dims().end()),
              (std::vector<int64_t>{20, 30, 3}));
    const image::Image want = PatternImage(2, 20, 30);
    EXPECT_EQ(img.byte_data(), std::string(want.pixels.begin(), want.pixels.end()));
  }
  {
    std::string list;
    for (int i = 0; i < 12; ++i) {
      list += files_[i % 4] + " " + std::to_string(i) + "\n";
    }
    WriteFile(list_, list);
    const std::string db = dir_ / "shuffled";
    ToolResult r = Make(db, "--scale 0 --shuffle");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<int> labels;
    for (const auto& rec : ReadAll(type_, db)) {
      const int label = rec.protos.protos(1).int32_data(0);
      labels.push_back(label);
      EXPECT_EQ(rec.protos.protos(0).string_data(0), bytes_[label % 4]) << label;
    }
    std::vector<int> sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_NE(labels, sorted);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(sorted[i], i);
  }
}

TEST_F(MakeImageDbTest, BadInputsExitOneWithAMessage) {
  auto expect_error = [&](const std::string& args, const std::string& needle) {
    ToolResult r = RunTool("make_image_db", args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_NE(r.err.find("make_image_db: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "'" << needle << "' not in: " << r.err;
  };
  const std::string out = dir_ / "out_db";
  const std::string common = " --output_db_name " + out + " --db " + type_ + " --input_folder " +
                             images_;
  expect_error("--output_db_name " + out, "--list_file is required");
  expect_error("--list_file " + list_, "--output_db_name is required");
  expect_error("--list_file " + (dir_ / "nope.txt") + common, "cannot open the list file");
  auto with_list = [&](const std::string& text, const std::string& needle) {
    WriteFile(list_, text);
    expect_error("--list_file " + list_ + common, needle);
    EXPECT_FALSE(fs::exists(out)) << "a partly written DB is removed (" << needle << ")";
  };
  with_list("a.png 1\nmissing.png 2\n", "cannot read the image file '" + images_ + "/missing.png'");
  WriteFile(images_ + "/junk.jpg", "this is not an image");
  with_list("a.png 1\njunk.jpg 2\n", "image file '" + images_ + "/junk.jpg'");
  with_list("a.png 1\njunk.jpg 2\n", "not a JPEG or PNG image");
  WriteFile(images_ + "/broken.jpg", bytes_[1].substr(0, 30));
  with_list("broken.jpg 2\n", "cannot decode the JPEG image");
  with_list("a.png 1\nb.jpg two\n", "list.txt:2: the label 'two' of 'b.jpg' is not an integer");
  with_list("a.png 1\nb.jpg\n", "list.txt:2: expected 'relative/path label', got 'b.jpg'");
  with_list("\n\n", "names no images");
  WriteFile(list_, "a.png 1\n");
  fs::create_directories(out);
  expect_error("--list_file " + list_ + common, "the output DB '" + out + "' already exists");
  fs::remove_all(out);
  expect_error("--list_file " + list_ + common + " --db nosuchdb", "nosuchdb");
}

// 64 Fashion-MNIST images as PNG files -> make_image_db -> a Caffe2-style training net on
// ImageInput: labels are the data set's, and the loss falls as the net fits the 64 images.
TEST_F(MakeImageDbTest, FashionMnistPngsTrainASmallNet) {
  const std::string fashion = "/usr/share/datasets/fashion-mnist/";
  if (!fs::exists(fashion + "t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  std::unique_ptr<DataSource> data = LoadIdxDataset(fashion + "t10k-images-idx3-ubyte.gz",
                                                    fashion + "t10k-labels-idx1-ubyte.gz");
  const int n = 64;
  std::string list;
  std::vector<int32_t> labels;
  image::Image img;
  img.height = img.width = 28;
  img.channels = 1;
  img.pixels.resize(784);
  for (int i = 0; i < n; ++i) {
    data->ReadSample(i, img.pixels.data());
    const std::string name = "fashion/" + std::to_string(i) + ".png";
    WriteFile(images_ + "/" + name, image::EncodePng(img));
    list += name + " " + std::to_string(data->Label(i)) + "\n";
    labels.push_back(data->Label(i));
  }
  WriteFile(list_, list);
  const std::string db = dir_ / "fashion_db";
  ToolResult r = Make(db, "--scale 0 --color=false");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 64 records"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("64 stored as given"), std::string::npos) << r.out;

  // The net, as Caffe2's brew would build it: ImageInput (NHWC) + NHWC2NCHW, LeNet-like layers.
  const int64_t batch = 16;
  ModelHelper model("fashion_png", "NCHW");
  OperatorDef* create = model.mutable_init_net()->add_op();
  *create = MakeOperatorDef("CreateDB", "", {}, {"reader"},
                            {MakeArgument("db_type", type_), MakeArgument("db", db)});
  OperatorDef* input = model.AddOp(
      "ImageInput", {"reader"}, {"data_nhwc", "label"},
      {MakeArgument("batch_size", batch), MakeArgument("crop", 24), MakeArgument("scale", 28),
       MakeArgument("color", 0), MakeArgument("mirror", 1), MakeArgument("mean", 128.f),
       MakeArgument("std", 128.f), MakeArgument("is_test", 0)});
  input->mutable_device_option()->set_random_seed(5);
  model.AddOp("NHWC2NCHW", {"data_nhwc"}, {"data"});
  model.Conv("data", "conv1", 1, 8, 5);
  model.Relu("conv1", "conv1");
  model.MaxPool("conv1", "pool1", 2, 2);
  model.FC("pool1", "fc", 8 * 10 * 10, 10);
  model.SoftmaxWithLoss("fc", "label", "softmax", "loss");
  NetDef train = model.net();
  NetDef init = model.init_net();
  const auto grads = Backward(&train, {"loss"});
  std::vector<ParamGradient> params;
  for (const auto& p : model.params()) {
    ASSERT_TRUE(grads.count(p.name)) << p.name;
    params.push_back({p.name, grads.at(p.name).dense, p.role, ""});
  }
  OptimizerOptions opt;
  opt.base_lr = 0.05f;
  AddMomentumSGD(opt, params, "", "", &train, &init);

  Workspace ws;
  ws.RunNetOnce(init);
  ws.CreateNet(train);
  std::vector<float> losses;
  for (int it = 0; it < 24; ++it) {
    ws.RunNet(train.name());
    const Tensor& label = ws.GetTensor("label");
    for (int64_t b = 0; b < batch; ++b) {
      ASSERT_EQ(label.data<int32_t>()[b], labels[(it * batch + b) % n]) << "iteration " << it;
    }
    const Tensor& x = ws.GetTensor("data");
    ASSERT_EQ(x.dims(), (std::vector<int64_t>{batch, 1, 24, 24}));
    losses.push_back(ws.GetTensor("loss").data<float>()[0]);
    ASSERT_TRUE(std::isfinite(losses.back())) << "iteration " << it;
  }
  const float first = (losses[0] + losses[1] + losses[2] + losses[3]) / 4;
  const float last = (losses[20] + losses[21] + losses[22] + losses[23]) / 4;
  std::printf("64 Fashion-MNIST PNGs via make_image_db + ImageInput: loss %.3f -> %.3f\n", first,
              last);
  EXPECT_GT(first, 1.5f);  // ~ln(10) at the start
  EXPECT_LT(last, 0.6f * first);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
