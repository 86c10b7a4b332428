// Caffe2's own MNIST tutorial nets (tests/fixtures/caffe2), unmodified except for the DB path:
// make_mnist_db writes the first 1000 Fashion-MNIST images to a LevelDB, then run_net runs the
// tutorial's init net (CreateDB + fillers) and training net (TensorProtosDBInput, LeNet, explicit
// gradient ops, WeightedSum SGD, Print / Summarize to files) for 100 iterations; the loss must
// fall and the accuracy rise well above chance. Also make_mnist_db's records and errors.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/proto_io.h"
#include "data/dataset_reader.h"
#include "data/db.h"
#include "proto/halfcaf.pb.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";
const std::string kImages = kFashion + "train-images-idx3-ubyte.gz";
const std::string kLabels = kFashion + "train-labels-idx1-ubyte.gz";
const std::string kCaffe2Dir = SourceDir() + "/tests/fixtures/caffe2/";
// The DB path the tutorial's author used; the only thing the test changes in the nets.
const std::string kAuthorDB =
    "/home/charlesrwest/cpp/projects/caffe2/cpp/MNIST/datasets/mnist-train-nchw-leveldb";

std::string FreshDir(const std::string& tag) {
  const std::string dir = TestTempDir() + "/" + tag;
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  return dir;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  size_t n = 0;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
    ++n;
  }
  EXPECT_GT(n, 0u) << "'" << from << "' not found";
  return s;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// The values Print (to_file) appended to <dir>/<blob>.log, one per run: "blob (...): v".
std::vector<double> LoggedValues(const std::string& path) {
  std::ifstream in(path);
  std::vector<double> out;
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.rfind(": ");
    if (colon != std::string::npos) out.push_back(std::stod(line.substr(colon + 2)));
  }
  return out;
}

double Mean(const std::vector<double>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + from, v.begin() + to, 0.0) / static_cast<double>(to - from);
}

std::string MakeMnistDbArgs(const std::string& images, const std::string& labels,
                            const std::string& out, const std::string& extra) {
  return "--image_file " + images + " --label_file " + labels + " --output_file " + out + " " +
         extra;
}

// A small idx pair: `n_images` 28x28 images (pixel = image index + row) and `n_labels` labels.
void WriteIdx(const std::string& images, const std::string& labels, int n_images, int n_labels) {
  auto be32 = [](std::string* s, uint32_t v) {
    for (int k = 3; k >= 0; --k) s->push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  };
  std::string img, lab;
  be32(&img, 0x803);
  be32(&img, n_images);
  be32(&img, 28);
  be32(&img, 28);
  for (int i = 0; i < n_images; ++i) {
    for (int p = 0; p < 784; ++p) img.push_back(static_cast<char>(i + p / 28));
  }
  be32(&lab, 0x801);
  be32(&lab, n_labels);
  for (int i = 0; i < n_labels; ++i) lab.push_back(static_cast<char>(i % 10));
  WriteText(images, img);
  WriteText(labels, lab);
}

TEST(Caffe2MnistDbTest, TutorialNetsTrainOnMakeMnistDbOutput) {
  if (!fs::exists(kImages) || !fs::exists(kLabels)) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  if (!db::DBTypeAvailable("leveldb")) GTEST_SKIP() << "built without LevelDB";
  const std::string dir = FreshDir("caffe2_mnist");
  const std::string db_path = dir + "/mnist-train-nchw-leveldb";
  ToolResult made = RunTool(
      "make_mnist_db",
      MakeMnistDbArgs(kImages, kLabels, db_path, "--db leveldb --channel_first --data_limit 1000"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("wrote 1000 records (image [1, 28, 28]"), std::string::npos) << made.out;

  // The records, read back through the DB API against the idx files.
  {
    std::unique_ptr<DataSource> fashion = LoadIdxDataset(kImages);
    std::unique_ptr<db::DB> d = db::OpenDB("leveldb", db_path, db::Mode::READ);
    std::unique_ptr<db::Cursor> c = d->NewCursor();
    std::vector<uint8_t> pixels(784);
    int n = 0;
    for (c->SeekToFirst(); c->Valid(); c->Next(), ++n) {
      char key[16];
      std::snprintf(key, sizeof(key), "%08d", n);
      ASSERT_EQ(c->key(), key);
      if (n % 250 != 0) continue;
      TensorProtos protos;
      ASSERT_TRUE(protos.ParseFromString(c->value()));
      ASSERT_EQ(protos.protos_size(), 2);
      const TensorProto& image = protos.protos(0);
      const TensorProto& label = protos.protos(1);
      EXPECT_EQ(image.data_type(), TensorProto::BYTE);
      EXPECT_EQ(std::vector<int64_t>(image.dims().begin(), image.dims().end()),
                (std::vector<int64_t>{1, 28, 28}));
      fashion->ReadSample(n, pixels.data());
      EXPECT_EQ(image.byte_data(), std::string(pixels.begin(), pixels.end())) << "record " << n;
      EXPECT_EQ(label.data_type(), TensorProto::INT32);
      EXPECT_EQ(label.dims_size(), 0);
      ASSERT_EQ(label.int32_data_size(), 1);
      EXPECT_EQ(label.int32_data(0), fashion->Label(n)) << "record " << n;
    }
    EXPECT_EQ(n, 1000);
  }

  // The tutorial nets with the DB path replaced (it also names the reader blob).
  const std::string init = dir + "/mnist_train_init_net.pbtxt";
  const std::string train = dir + "/mnist_train_net.pbtxt";
  WriteText(init, ReplaceAll(ReadFile(kCaffe2Dir + "mnist_train_init_net.pbtxt"), kAuthorDB,
                             db_path));
  WriteText(train, ReplaceAll(ReadFile(kCaffe2Dir + "mnist_train_net.pbtxt"), kAuthorDB,
                              db_path));
  // Print / Summarize (to_file) write into the workspace root, run_net's working folder.
  const std::string cmd = "cd " + dir + " && " + std::string(HALFCAF_BIN_DIR) +
                          "/run_net --init_net " + init + " --net " + train +
                          " --iters 100 --output_blobs loss,accuracy --output " + dir +
                          "/out.pbtxt 2>" + dir + "/stderr.txt";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(dir + "/stderr.txt");

  const std::vector<double> loss = LoggedValues(dir + "/loss.log");
  const std::vector<double> accuracy = LoggedValues(dir + "/accuracy.log");
  ASSERT_EQ(loss.size(), 100u);
  ASSERT_EQ(accuracy.size(), 100u);
  const double first_loss = Mean(loss, 0, 5), last_loss = Mean(loss, 80, 100);
  const double first_acc = Mean(accuracy, 0, 5), last_acc = Mean(accuracy, 80, 100);
  std::printf("tutorial net on 1000 Fashion-MNIST images: loss %.3f -> %.3f, accuracy %.3f -> "
              "%.3f (means of iterations 1-5 and 81-100)\n",
              first_loss, last_loss, first_acc, last_acc);
  EXPECT_GT(first_loss, 1.5);  // ~ln(10) = 2.3 at the start
  EXPECT_LT(last_loss, 0.5 * first_loss);
  EXPECT_GT(last_acc, 0.6);  // chance is 0.1
  EXPECT_GT(last_acc, first_acc + 0.3);

  // run_net's output holds the final loss and accuracy, the last values Print logged.
  TensorProtos out;
  ReadProtoFromFile(dir + "/out.pbtxt", &out);
  ASSERT_EQ(out.protos_size(), 2);
  EXPECT_EQ(out.protos(0).name(), "loss");
  EXPECT_NEAR(out.protos(0).float_data(0), loss.back(), 1e-4 * (1 + loss.back()));
  EXPECT_EQ(out.protos(1).name(), "accuracy");
  EXPECT_NEAR(out.protos(1).float_data(0), accuracy.back(), 1e-6);
  // Summarize wrote one file per parameter and gradient.
  for (const char* blob : {"conv1_w", "conv1_w_grad", "pred_b", "pred_b_grad"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + blob + ".summary")) << blob;
  }
}

// train_net reads a make_mnist_db DB directly (--data_format leveldb / lmdb), channel first or
// last, and trains LeNet on it in mixed precision.
TEST(Caffe2MnistDbTest, TrainNetTrainsFromMakeMnistDbOutput) {
  if (!std::filesystem::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  for (const char* type : {"leveldb", "lmdb"}) {
    if (!db::DBTypeAvailable(type)) continue;
    const std::string dir = FreshDir(std::string("train_net_") + type);
    const std::string db_path = dir + "/fashion-db";
    // LevelDB channel first, LMDB channel last (make_mnist_db's default).
    const std::string layout = std::string(type) == "leveldb" ? " --channel_first" : "";
    ToolResult made = RunTool("make_mnist_db", MakeMnistDbArgs(kImages, kLabels, db_path,
                                                               std::string("--db ") + type +
                                                                   layout + " --data_limit 2000"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const std::string summary = dir + "/summary.json";
    ToolResult r = RunTool(
        "train_net", "--net " + ::halfcaf::testing::SourceDir() +
                         "/models/lenet/lenet_train_net.pbtxt --init_net " +
                         ::halfcaf::testing::SourceDir() + "/models/lenet/lenet_init_net.pbtxt " +
                         "--data_format " + type + " --train_data " + db_path + " --test_data " +
                         db_path + " --iters 150 --batch_size 32 --dtype float16 --threads 2 "
                         "--summary_json " + summary);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("2000 training samples"), std::string::npos) << r.out;
    const std::string json = ReadFile(summary);
    const size_t at = json.find("\"test_accuracy\": ");
    ASSERT_NE(at, std::string::npos) << json;
    EXPECT_GT(std::stod(json.substr(at + 17)), 0.65) << type << "\n" << r.out;
  }
  // The DB type must match the DB: one clear line, before any training.
  if (db::DBTypeAvailable("leveldb") && db::DBTypeAvailable("lmdb")) {
    const std::string dir = FreshDir("train_net_mismatch");
    ASSERT_EQ(RunTool("make_mnist_db", MakeMnistDbArgs(kImages, kLabels, dir + "/l",
                                                       "--db lmdb --data_limit 10"))
                  .exit_code,
              0);
    ToolResult r = RunTool("train_net", "--net " + ::halfcaf::testing::SourceDir() +
                                            "/models/lenet/lenet_train_net.pbtxt --init_net " +
                                            ::halfcaf::testing::SourceDir() +
                                            "/models/lenet/lenet_init_net.pbtxt --data_format "
                                            "leveldb --train_data " + dir + "/l");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("cannot open leveldb DB '" + dir + "/l'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("iter "), std::string::npos) << r.out;
  }
}

// LMDB output, channel last, all items (no --data_limit), from small idx files.
TEST(Caffe2MnistDbTest, WritesLmdbChannelLast) {
  if (!db::DBTypeAvailable("lmdb")) GTEST_SKIP() << "built without LMDB";
  const std::string dir = FreshDir("mnist_db_lmdb");
  WriteIdx(dir + "/small-images-idx3-ubyte", dir + "/small-labels-idx1-ubyte", 3, 3);
  ToolResult r = RunTool("make_mnist_db",
                         MakeMnistDbArgs(dir + "/small-images-idx3-ubyte",
                                         dir + "/small-labels-idx1-ubyte", dir + "/out_lmdb",
                                         "--db lmdb"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  db::DBReader reader("lmdb", dir + "/out_lmdb");
  for (int i = 0; i < 4; ++i) {
    std::string key, value;
    reader.Read(&key, &value);
    const int item = i % 3;  // the reader wraps
    char want[16];
    std::snprintf(want, sizeof(want), "%08d", item);
    EXPECT_EQ(key, want);
    TensorProtos protos;
    ASSERT_TRUE(protos.ParseFromString(value));
    ASSERT_EQ(protos.protos_size(), 2);
    EXPECT_EQ(std::vector<int64_t>(protos.protos(0).dims().begin(), protos.protos(0).dims().end()),
              (std::vector<int64_t>{28, 28, 1}));
    const std::string& px = protos.protos(0).byte_data();
    ASSERT_EQ(px.size(), 784u);
    EXPECT_EQ(static_cast<uint8_t>(px[0]), item);
    EXPECT_EQ(static_cast<uint8_t>(px[783]), item + 27);
    EXPECT_EQ(protos.protos(1).int32_data(0), item);
  }
}

TEST(Caffe2MnistDbTest, ErrorsAreOneLine) {
  const std::string dir = FreshDir("mnist_db_errors");
  const std::string images = dir + "/bad-images-idx3-ubyte";
  const std::string labels = dir + "/bad-labels-idx1-ubyte";
  WriteIdx(images, labels, 3, 5);
  auto expect_error = [](const ToolResult& r, const std::string& substr) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("make_mnist_db: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(substr), std::string::npos) << r.err;
  };
  expect_error(RunTool("make_mnist_db", MakeMnistDbArgs(dir + "/missing-images", labels,
                                                        dir + "/o1", "")),
               dir + "/missing-images");
  expect_error(RunTool("make_mnist_db", MakeMnistDbArgs(images, labels, dir + "/o2", "")),
               "holds 3 images but idx labels file '" + labels + "' holds 5 labels");
  expect_error(RunTool("make_mnist_db", "--image_file " + images), "--label_file is required");
  WriteIdx(images, labels, 3, 3);
  expect_error(RunTool("make_mnist_db",
                       MakeMnistDbArgs(images, labels, dir + "/o3", "--data_limit 0")),
               "--data_limit must be a positive count or -1");
  expect_error(
      RunTool("make_mnist_db", MakeMnistDbArgs(images, labels, dir + "/o4", "--db minidb")),
      "cannot open minidb DB '" + dir + "/o4'");
  if (db::DBTypeAvailable("leveldb")) {
    ToolResult ok = RunTool("make_mnist_db", MakeMnistDbArgs(images, labels, dir + "/o5", ""));
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    // The DB exists now: make_mnist_db does not add to an existing one.
    expect_error(RunTool("make_mnist_db", MakeMnistDbArgs(images, labels, dir + "/o5", "")),
                 dir + "/o5");
  }
}

// run_net --trace of the tutorial nets: the DB reader's prefetch thread has its own track, with a
// "prefetch batch" span per batch it prepared while the net ran.
TEST(Caffe2MnistDbTest, TraceShowsTheDbReadersPrefetchThread) {
  if (!fs::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  if (!db::DBTypeAvailable("leveldb")) GTEST_SKIP() << "built without LevelDB";
  const std::string dir = FreshDir("caffe2_mnist_trace");
  const std::string db_path = dir + "/mnist-train-nchw-leveldb";
  ASSERT_EQ(RunTool("make_mnist_db", MakeMnistDbArgs(kImages, kLabels, db_path,
                                                     "--db leveldb --channel_first "
                                                     "--data_limit 640"))
                .exit_code,
            0);
  const std::string init = dir + "/init.pbtxt", train = dir + "/train.pbtxt";
  WriteText(init, ReplaceAll(ReadFile(kCaffe2Dir + "mnist_train_init_net.pbtxt"), kAuthorDB,
                             db_path));
  WriteText(train, ReplaceAll(ReadFile(kCaffe2Dir + "mnist_train_net.pbtxt"), kAuthorDB, db_path));
  const std::string trace = dir + "/trace.json";
  const ToolResult r = RunShell("cd " + dir + " && " + std::string(HALFCAF_BIN_DIR) +
                                "/run_net --init_net " + init + " --net " + train +
                                " --iters 6 --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(trace));
  int prefetch_tid = -1;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name" &&
        e.at("args").at("name") == "prefetch: TensorProtosDBInput") {
      prefetch_tid = e.at("tid").get<int>();
    }
  }
  ASSERT_GE(prefetch_tid, 0) << j.dump();
  int batches = 0, reader_runs = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.at("name") == "prefetch batch") {
      EXPECT_EQ(e.at("tid").get<int>(), prefetch_tid);
      ++batches;
    }
    reader_runs += e.at("name") == "TensorProtosDBInput";
  }
  EXPECT_EQ(reader_runs, 6);
  EXPECT_GE(batches, 5);  // each run but the first takes a prefetched batch (and asks the next)
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
