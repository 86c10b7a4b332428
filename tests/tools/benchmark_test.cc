// benchmark on good and bad input, at tiny sizes: JSON / CSV / SVG outputs, the per-operator
// profile, forward mode, a net from files, out-of-memory batches, the PyTorch and ONNX Runtime
// comparisons.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "onnx/onnx_import.h"
#include "operators/nn/channel_block.h"
#include "tests/tools/ort_compare.h"
#include "tests/tools/tool_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const char kTinyLeNet[] = "--model lenet --batch_size 2,4 --iters 2 --warmup 1 --threads 1 ";
const char kTinyResNet[] =
    "--model resnet18 --image_size 32 --num_classes 10 --batch_size 2 --iters 2 --warmup 1 "
    "--threads 1 ";

// The JSON objects of "results", as strings (benchmark writes one key per line).
std::vector<std::string> ResultObjects(const std::string& json) {
  std::vector<std::string> out;
  size_t p = json.find("\"results\": [");
  if (p == std::string::npos) return out;
  while ((p = json.find("\n    {\n", p)) != std::string::npos) {
    size_t e = json.find("\n    }", p);
    out.push_back(json.substr(p, e - p));
    p = e;
  }
  return out;
}

std::string Field(const std::string& obj, const std::string& key) {
  const std::string k = "\"" + key + "\": ";
  size_t p = obj.find(k);
  if (p == std::string::npos) return "<missing>";
  p += k.size();
  size_t e = obj.find_first_of(",\n", p);
  std::string v = obj.substr(p, e - p);
  if (!v.empty() && v[0] == '"') v = v.substr(1, v.size() - 2);
  return v;
}

double Number(const std::string& obj, const std::string& key) {
  const std::string v = Field(obj, key);
  EXPECT_NE(v, "<missing>") << key;
  return v == "<missing>" || v == "null" ? NAN : std::stod(v);
}

TEST(BenchmarkTest, LeNetTrainWritesSaneJsonCsvAndSvg) {
  const std::string dir = TestTempDir();
  const std::string json = dir + "/lenet.json", csv = dir + "/lenet.csv", svg = dir + "/lenet.svg";
  auto r = RunTool("benchmark", std::string(kTinyLeNet) + "--price_per_hour 3.6 --json " + json +
                                    " --csv " + csv + " --plot " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  // Progress: the configuration of the sweep, then what it is doing.
  EXPECT_NE(r.err.find("benchmark [1/4]: lenet fp32 batch 2  warm-up"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("benchmark [4/4]: lenet fp16 batch 4  timing"), std::string::npos) << r.err;

  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 4u) << ReadFile(json);
  const std::string want[4][2] = {{"fp32", "2"}, {"fp32", "4"}, {"fp16", "2"}, {"fp16", "4"}};
  double fp32_ips[2] = {0, 0};
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string& o = results[i];
    EXPECT_EQ(Field(o, "precision"), want[i][0]);
    EXPECT_EQ(Field(o, "batch_size"), want[i][1]);
    EXPECT_EQ(Field(o, "status"), "ok");
    EXPECT_EQ(Field(o, "model"), "lenet");
    EXPECT_EQ(Field(o, "mode"), "train");
    EXPECT_EQ(Number(o, "iters"), 2);
    const double med = Number(o, "ms_per_iter_median"), lo = Number(o, "ms_per_iter_min"),
                 hi = Number(o, "ms_per_iter_max");
    EXPECT_GT(med, 0);
    EXPECT_LE(lo, med);
    EXPECT_LE(med, hi);
    EXPECT_LE(lo, Number(o, "ms_per_iter_p10"));
    EXPECT_GE(hi, Number(o, "ms_per_iter_p90"));
    const double ips = Number(o, "images_per_sec");
    const double batch = std::stod(want[i][1]);
    EXPECT_NEAR(ips, 1000 * batch / med, 1e-3 * ips);
    // $3.6/hour = $0.001/s: a million images cost 1000 / images_per_sec dollars.
    EXPECT_NEAR(Number(o, "cost_per_million_images"), 1000 / ips, 1e-3 * 1000 / ips);
    EXPECT_GE(Number(o, "peak_memory_mb"), 0);
    EXPECT_LT(Number(o, "peak_memory_mb"), 4096);
    if (i < 2) {
      fp32_ips[i] = ips;
      EXPECT_DOUBLE_EQ(Number(o, "speedup_vs_fp32"), 1);
    } else {
      EXPECT_NEAR(Number(o, "speedup_vs_fp32"), ips / fp32_ips[i - 2], 1e-3);
    }
  }

  const std::string c = ReadFile(csv);
  EXPECT_EQ(CountLines(c), 5) << c;
  EXPECT_EQ(c.rfind("model,mode,device,order,precision,batch_size,status,", 0), 0u) << c;

  const std::string s = ReadFile(svg);
  EXPECT_EQ(s.rfind("<svg", 0), 0u) << s.substr(0, 100);
  EXPECT_NE(s.find("</svg>"), std::string::npos);
  EXPECT_NE(s.find("halfcaf fp32"), std::string::npos);  // legend
  EXPECT_NE(s.find("halfcaf fp16"), std::string::npos);
  EXPECT_NE(s.find("<polyline"), std::string::npos);    // a line per precision
  EXPECT_NE(s.find(">batch size"), std::string::npos);  // axis label
  EXPECT_NE(s.find(">4</text>"), std::string::npos);    // x tick at batch 4
}

// Data-parallel training on CPU replicas: the table says so, every configuration runs, and
// images/s counts the whole batch.
// The cuDNN algorithm search (CUDA only, so on CPU only what it records): heuristic by default,
// --exhaustive_search with the stated workspace limit, in the JSON's header and every result.
TEST(BenchmarkTest, ConvAlgoSearchIsRecorded) {
  const std::string dir = TestTempDir();
  const std::pair<std::string, std::pair<std::string, std::string>> cases[] = {
      {"", {"heuristic", "67108864"}},
      {"--exhaustive_search --ws_nbytes_limit 1048576", {"exhaustive", "1048576"}}};
  for (const auto& c : cases) {
    const std::string json = dir + "/algo.json";
    auto r = RunTool("benchmark", std::string(kTinyLeNet) + "--precision fp32 --batch_size 2 " +
                                      c.first + " --json " + json);
    ASSERT_EQ(r.exit_code, 0) << c.first << "\n" << r.err;
    const std::string j = ReadFile(json);
    const std::string head = j.substr(0, j.find("\"results\""));
    EXPECT_EQ(Field(head, "cudnn_algo_search"), c.second.first) << j;
    EXPECT_EQ(Field(head, "cudnn_ws_nbytes_limit"), c.second.second) << j;
    const auto results = ResultObjects(j);
    ASSERT_EQ(results.size(), 1u) << j;
    EXPECT_EQ(Field(results[0], "cudnn_algo_search"), c.second.first);
    EXPECT_EQ(Field(results[0], "cudnn_ws_nbytes_limit"), c.second.second);
  }
}

TEST(BenchmarkTest, DataParallelReplicas) {
  std::string json = TestTempDir() + "/dp.json";
  auto r = RunTool("benchmark", std::string(kTinyLeNet) + "--replicas 2 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 data-parallel replicas (CPU, CPU)"), std::string::npos) << r.out;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 4u);  // fp32, fp16 x batch 2, 4
  for (const auto& res : results) {
    EXPECT_EQ(Field(res, "status"), "ok") << res;
    EXPECT_NEAR(Number(res, "images_per_sec"),
                Number(res, "batch_size") * 1000.0 / Number(res, "ms_per_iter_median"),
                1e-3 * Number(res, "images_per_sec"))
        << res;
  }
}

TEST(BenchmarkTest, PerOpProfileListsConvForwardAndBackward) {
  const std::string json = TestTempDir() + "/perop.json";
  auto r =
      RunTool("benchmark", std::string(kTinyResNet) + "--precision fp32 --per_op --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("per-operator profile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("forward   Conv "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backward  ConvGradient "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("update    MixedPrecisionMomentumSGDUpdate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slowest operators"), std::string::npos) << r.out;
  // The JSON profile has Conv with a FLOP rate from the cost function.
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 1u);
  size_t p = results[0].find("\"type\": \"Conv\"");
  ASSERT_NE(p, std::string::npos) << results[0];
  const std::string conv = results[0].substr(p, results[0].find('}', p) - p);
  EXPECT_EQ(Number(conv, "count"), 20);
  EXPECT_GT(Number(conv, "gflop"), 0.01);  // ResNet-18 at 32x32, batch 2: ~0.15 GFLOP
  EXPECT_GT(Number(conv, "gflops_per_sec"), 0);
}

// --recompute all: the header says so, and the per-op profile shows the forward ops run again in
// the backward phase (convolutions and batch normalizations of ResNet-18's residual blocks).
TEST(BenchmarkTest, RecomputeRunsForwardOpsInTheBackwardPhase) {
  auto r = RunTool("benchmark", std::string(kTinyResNet) + "--precision fp32 --per_op "
                                                           "--recompute all");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("halfcaf benchmark: resnet18, train (recomputing all)"), std::string::npos)
      << r.out;
  // FP32 training on the CPU runs on the channel-blocked layout by default where oneDNN computes
  // in it; the header says what it took (ResNet-18: every convolution, the batch normalizations
  // followed by a ReLU: models/bn_relu_fusion.h, and the residual Adds followed by one:
  // models/residual_relu_fusion.h).
  const int64_t block = CpuConvChannelBlock();
  EXPECT_EQ(r.out.find("[fp32: channel-blocked (" + std::to_string(block) +
                       ": 20 convolutions), batch norm + ReLU fused (9), residual add + ReLU "
                       "fused (8)]") != std::string::npos,
            block != 0)
      << r.out;
  // --conv_algorithm winograd: ResNet-18's 3 x 3, stride 1 convolutions (13 of its 20).
  const auto w = RunTool("benchmark", std::string(kTinyResNet) + "--precision fp32 "
                                                                 "--blocked_layout off "
                                                                 "--conv_algorithm winograd");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("[fp32: batch norm + ReLU fused (9), residual add + ReLU fused (8), "
                       "Winograd (13 convolutions)]"),
            std::string::npos)
      << w.out;
  EXPECT_NE(r.out.find("backward  Conv "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backward  SpatialBN "), std::string::npos) << r.out;
  auto off = RunTool("benchmark", std::string(kTinyResNet) + "--precision fp32 --per_op");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out.find("backward  Conv "), std::string::npos) << off.out;
  EXPECT_EQ(off.out.find("recomputing"), std::string::npos) << off.out;
}

TEST(BenchmarkTest, ForwardModeAndNhwc) {
  const std::string json = TestTempDir() + "/fwd.json";
  auto r =
      RunTool("benchmark", std::string(kTinyResNet) + "--mode forward --order NHWC --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 2u);
  for (const auto& o : results) {
    EXPECT_EQ(Field(o, "mode"), "forward");
    EXPECT_EQ(Field(o, "order"), "NHWC");
    EXPECT_GT(Number(o, "images_per_sec"), 0);
  }
}

TEST(BenchmarkTest, NetFromFiles) {
  const std::string dir = TestTempDir() + "/lenet_files";
  ASSERT_EQ(RunTool("make_model", "--model lenet --out " + dir).exit_code, 0);
  const std::string files =
      "--net " + dir + "/train_net.pbtxt --init_net " + dir + "/init_net.pbtxt ";
  for (const char* mode : {"train", "forward"}) {
    auto r = RunTool("benchmark", files +
                                      "--input_shape 1,28,28 --batch_size 2 --iters 1 "
                                      "--warmup 0 --threads 1 --mode " +
                                      mode);
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.err;
    EXPECT_NE(r.out.find("fp16"), std::string::npos) << r.out;
  }
}

TEST(BenchmarkTest, OutOfMemoryBatchIsReportedAndTheSweepContinues) {
  const std::string json = TestTempDir() + "/oom.json";
  // 1.5 GB of address space (set in the shell that RunTool starts): batch 60000 needs a 2.7 GB
  // conv1 output.
  auto r = RunTool("benchmark", "--version >/dev/null 2>&1; ulimit -v 1500000 && " +
                                    std::string(HALFCAF_BIN_DIR) +
                                    "/benchmark --model lenet --precision fp32 --batch_size "
                                    "2,60000,4 --iters 1 --warmup 0 --threads 1 --json " +
                                    json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("batch 60000: out of memory"), std::string::npos) << r.err;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(Field(results[0], "status"), "ok");
  EXPECT_EQ(Field(results[1], "status"), "out of memory");
  EXPECT_EQ(Field(results[2], "status"), "ok");
  EXPECT_GT(Number(results[2], "images_per_sec"), 0);
}

TEST(BenchmarkTest, CompareWithoutTorchFallsBackToHalfcafAlone) {
  auto r = RunTool("benchmark", std::string(kTinyResNet) +
                                    "--precision fp32 --compare pytorch --python /nonexistent/py");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot import torch"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("pytorch"), std::string::npos) << r.out;
}

TEST(BenchmarkTest, CompareWithPyTorch) {
  HALFCAF_REQUIRE_PEER(Peer::kTorchvision);
  const std::string json = TestTempDir() + "/cmp.json";
  auto r = RunTool("benchmark", std::string(kTinyResNet) + "--compare pytorch --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pytorch i/s"), std::string::npos) << r.out;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(Field(results[0], "pytorch_status"), "ok");
  EXPECT_GT(Number(results[0], "pytorch_images_per_sec"), 0);
  EXPECT_NEAR(Number(results[0], "halfcaf_vs_pytorch"),
              Number(results[0], "images_per_sec") / Number(results[0], "pytorch_images_per_sec"),
              1e-3 * Number(results[0], "halfcaf_vs_pytorch"));
  // PyTorch's fp16 (autocast) needs CUDA.
  EXPECT_NE(Field(results[1], "pytorch_status").find("skipped"), std::string::npos);
}

// The AC-GAN's iteration: its D and G steps timed apart, time per 1000 images, cost per million,
// and the PyTorch peer's same architecture beside it.
TEST(BenchmarkTest, AcGanStepsAndThePeer) {
  HALFCAF_REQUIRE_PEER(Peer::kTorchvision);
  const std::string json = TestTempDir() + "/acgan.json", csv = TestTempDir() + "/acgan.csv";
  auto r = RunTool("benchmark", "--model acgan --batch_size 8,16 --precision fp32,bf16 --iters 3 "
                                "--warmup 1 --threads 1 --compare pytorch --per_op --json " +
                                    json + " --csv " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("d_step ms"), std::string::npos) << r.out;
  // --per_op profiles each step's net in its own table.
  EXPECT_NE(r.out.find("acgan fp32 batch 8, d_step (3 iterations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ConvTransposeGradient"), std::string::npos) << r.out;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 4u);
  for (const auto& res : results) {
    const double d = Number(res, "d_step_ms_median"), g = Number(res, "g_step_ms_median");
    EXPECT_GT(d, 0);
    EXPECT_GT(g, 0);
    EXPECT_LE(d + g, 1.05 * Number(res, "ms_per_iter_max") + 1);
    EXPECT_NEAR(Number(res, "ms_per_1000_images"),
                1000 * Number(res, "ms_per_iter_median") / Number(res, "batch_size"),
                1e-5 * Number(res, "ms_per_1000_images"));
    EXPECT_GT(Number(res, "cost_per_million_images"), 0);
    EXPECT_EQ(Field(res, "pytorch_status"), "ok");
    EXPECT_GT(Number(res, "pytorch_d_step_ms_median"), 0);
  }
  EXPECT_NE(ReadFile(csv).find("d_step="), std::string::npos);
  // No --price_per_hour: the default for the device, named in the table and the JSON.
  EXPECT_NE(r.out.find("$0.1/hour (a 2-vCPU compute VM"), std::string::npos) << r.out;
  EXPECT_NE(ReadFile(json).find("\"price_source\": \"a 2-vCPU compute VM"), std::string::npos);
  const auto bad = RunTool("benchmark", "--model acgan --mode forward");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--model acgan times its training iteration"), std::string::npos);
  const auto winograd = RunTool("benchmark", "--model acgan --conv_algorithm winograd");
  EXPECT_EQ(winograd.exit_code, 1);
  EXPECT_NE(winograd.err.find("convolutions direct: leave out"), std::string::npos) << winograd.err;
}

// The AC-GAN's memory: its iteration is memory-planned (--optimize_memory, by default), and
// --recompute all lowers the peak further.
TEST(BenchmarkTest, AcGanMemoryPlanAndRecompute) {
  auto peak = [](const std::string& flags) {
    const std::string json = TestTempDir() + "/acgan_memory.json";
    auto r = RunTool("benchmark",
                     "--model acgan --batch_size 128 --precision fp32 --iters 1 "
                     "--warmup 1 --json " +
                         json + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto results = ResultObjects(ReadFile(json));
    return results.size() == 1 ? Number(results[0], "peak_memory_mb") : -1.;
  };
  const double unplanned = peak("--optimize_memory=false"), planned = peak(""),
               recomputed = peak("--recompute all");
  EXPECT_LT(planned, 0.5 * unplanned);
  EXPECT_LT(recomputed, 0.9 * planned);
  EXPECT_GT(recomputed, 0);
}

// The cells of CSV row `row` (0: the header).
std::vector<std::string> CsvCells(const std::string& csv, int row) {
  size_t p = 0;
  for (int i = 0; i < row && p != std::string::npos; ++i) {
    p = csv.find('\n', p);
    if (p != std::string::npos) ++p;
  }
  std::vector<std::string> cells;
  if (p == std::string::npos || p >= csv.size()) return cells;
  const std::string line = csv.substr(p, csv.find('\n', p) - p);
  size_t b = 0;
  for (size_t e; (e = line.find(',', b)) != std::string::npos; b = e + 1) {
    cells.push_back(line.substr(b, e - b));
  }
  cells.push_back(line.substr(b));
  return cells;
}

// Entries of `dir` whose name starts with `prefix`; -1 when it cannot be read.
int CountEntries(const std::string& dir, const std::string& prefix) {
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
  closedir(d);
  return n;
}

// --compare ort: ONNX Runtime (the venv tools/setup_ort.sh makes) runs the timed model exported
// by halfcaf; skipped without the venv or without ONNX support in this build.
class BenchmarkOrtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
    HALFCAF_REQUIRE_PEER(Peer::kOnnxRuntime);
  }
};

TEST_F(BenchmarkOrtTest, ForwardNumbersInTheOrtColumns) {
  const std::string dir = TestTempDir() + "/ort_cmp";
  const std::string tmp = dir + "/tmp";
  ASSERT_EQ(RunShell("mkdir -p " + tmp).exit_code, 0);
  const std::string json = dir + "/ort.json", csv = dir + "/ort.csv";
  // Where the exported models go (TMPDIR: a folder halfcaf_ort.XXXXXX), to see them removed
  // afterwards (onnxruntime leaves a file .ses of its own there).
  auto r = RunTool("benchmark",
                   "--model resnet18 --image_size 32 --num_classes 10 --mode forward "
                   "--batch_size 1,2 --precision fp32,fp16 --iters 2 --warmup 1 --threads 1 "
                   "--compare ort --json " + json + " --csv " + csv,
                   "TMPDIR=" + tmp + " ");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("running the ONNX Runtime peer"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("ort i/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hc/ort"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ort peak MB"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("pytorch i/s"), std::string::npos) << r.out;
  EXPECT_EQ(CountEntries(tmp, "halfcaf_ort."), 0) << "the exported models are left in " << tmp;

  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 4u) << ReadFile(json);  // fp32, fp16 x batch 1, 2
  for (int i = 0; i < 2; ++i) {
    const std::string& o = results[i];
    ASSERT_EQ(Field(o, "precision"), "fp32");
    EXPECT_EQ(Field(o, "ort_status"), "ok") << o;
    const double ips = Number(o, "ort_images_per_sec"), ms = Number(o, "ort_ms_per_iter_median");
    EXPECT_GT(ips, 0) << o;
    EXPECT_NEAR(ips, 1000 * Number(o, "batch_size") / ms, 1e-3 * ips) << o;
    EXPECT_NEAR(Number(o, "halfcaf_vs_ort"), Number(o, "images_per_sec") / ips,
                1e-3 * Number(o, "halfcaf_vs_ort"))
        << o;
    EXPECT_GE(Number(o, "ort_peak_memory_mb"), 0) << o;
    EXPECT_LT(Number(o, "ort_peak_memory_mb"), 4096) << o;
    EXPECT_EQ(Field(o, "pytorch_status"), "<missing>") << o;
  }
  for (int i = 2; i < 4; ++i) {  // the ONNX Runtime peer runs the fp32 model only
    EXPECT_EQ(Field(results[i], "precision"), "fp16");
    EXPECT_EQ(Field(results[i], "ort_status").rfind("skipped", 0), 0u) << results[i];
    EXPECT_EQ(Field(results[i], "ort_images_per_sec"), "null") << results[i];
  }

  const std::string c = ReadFile(csv);
  const std::vector<std::string> head = CsvCells(c, 0), fp32 = CsvCells(c, 1),
                                 fp16 = CsvCells(c, 3);
  ASSERT_EQ(head.size(), fp32.size()) << c;
  ASSERT_EQ(head.size(), fp16.size()) << c;
  for (const char* col : {"ort_images_per_sec", "halfcaf_vs_ort", "ort_peak_memory_mb"}) {
    size_t k = 0;
    while (k < head.size() && head[k] != col) ++k;
    ASSERT_LT(k, head.size()) << col << " not in " << c;
    EXPECT_FALSE(fp32[k].empty()) << col << "\n" << c;
    EXPECT_TRUE(fp16[k].empty()) << col << "\n" << c;
  }
}

// --net model.onnx: the file goes to ONNX Runtime as it is; a batch size its input cannot take is
// reported skipped, the others timed.
TEST_F(BenchmarkOrtTest, OnnxNetIsRunAsItIs) {
  const std::string dir = TestTempDir() + "/ort_net";
  ASSERT_EQ(RunTool("make_model", "--model lenet --is_test --out " + dir).exit_code, 0);
  const std::string model = dir + "/lenet.onnx", json = dir + "/net.json";
  auto e = RunTool("caffe2_to_onnx", "--init_net " + dir + "/init_net.pbtxt --predict_net " + dir +
                                         "/train_net.pbtxt --input_shape 1,1,28,28 --out " + model);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto r = RunTool("benchmark", "--net " + model + " --mode forward --precision fp32 "
                                "--batch_size 1 --iters 2 --warmup 1 --threads 1 --compare ort "
                                "--json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("exporting"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--onnx '" + model + "'"), std::string::npos) << r.err;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(Field(results[0], "ort_status"), "ok") << results[0];
  EXPECT_GT(Number(results[0], "ort_images_per_sec"), 0) << results[0];
  // The peer alone, at a batch size the model's fixed input cannot take.
  auto p = RunShell(OrtPython() + " " + SourceDir() + "/tools/peers/resnet_ort.py --onnx " +
                    model + " --batch_sizes 1,2 --input_shape 1,28,28 --iters 1 --warmup 0");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(CountLines(p.out), 2) << p.out;
  EXPECT_NE(p.out.find("\"batch_size\": 1, \"status\": \"ok\""), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("\"batch_size\": 2, \"status\": \"skipped: the model's input"),
            std::string::npos)
      << p.out;
}

// Without ONNX Runtime at --ort_python: said once on stderr; halfcaf's own results stand.
TEST(BenchmarkTest, CompareOrtWithoutOnnxRuntimeFallsBackToHalfcafAlone) {
  if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
  const std::string json = TestTempDir() + "/noort.json";
  auto r = RunTool("benchmark", std::string(kTinyResNet) +
                                    "--mode forward --precision fp32 --compare ort "
                                    "--ort_python /nonexistent/python --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--compare ort: no ONNX Runtime at /nonexistent/python; run "
                       "tools/setup_ort.sh"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ort i/s"), std::string::npos) << r.out;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_GT(Number(results[0], "images_per_sec"), 0);
  EXPECT_EQ(Field(results[0], "ort_status"), "<missing>");
}

// Both peers in one run: each one's columns, and neither's numbers in the other's.
TEST_F(BenchmarkOrtTest, PyTorchAndOrtTogether) {
  HALFCAF_REQUIRE_PEER(Peer::kTorchvision);
  const std::string json = TestTempDir() + "/both.json";
  auto r = RunTool("benchmark", std::string(kTinyResNet) +
                                    "--mode forward --precision fp32 --compare pytorch,ort "
                                    "--json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pytorch i/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ort i/s"), std::string::npos) << r.out;
  const auto results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(Field(results[0], "pytorch_status"), "ok") << results[0];
  EXPECT_EQ(Field(results[0], "ort_status"), "ok") << results[0];
  EXPECT_GT(Number(results[0], "pytorch_images_per_sec"), 0);
  EXPECT_GT(Number(results[0], "ort_images_per_sec"), 0);
  EXPECT_NE(Number(results[0], "pytorch_images_per_sec"), Number(results[0], "ort_images_per_sec"));
}

// --max_batch finds the largest batch within --mem_limit_mb (the limit the allocator enforces):
// a batch that fits, with the plan at least as large as without it; a limit below the model's
// own size fits nothing, and a timed configuration over the limit is reported, not killed.
TEST(BenchmarkTest, MaxBatchWithinAMemoryLimit) {
  const std::string base = "--model lenet --max_batch --mem_limit_mb 60 --batch_size 16 "
                           "--precision fp32 --threads 1 ";
  auto Largest = [&](const std::string& extra) -> int64_t {
    auto r = RunTool("benchmark", base + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t p = r.out.find("\nfp32");
    EXPECT_NE(p, std::string::npos) << r.out;
    return p == std::string::npos ? -1 : std::stoll(r.out.substr(p + 5));
  };
  const int64_t planned = Largest(""), unplanned = Largest("--optimize_memory=false");
  EXPECT_GT(unplanned, 16);
  EXPECT_GE(planned, unplanned);
  auto tiny = RunTool("benchmark", "--model lenet --max_batch --mem_limit_mb 1 --precision fp32 "
                                   "--batch_size 4 --threads 1");
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_NE(tiny.out.find("not even batch 1"), std::string::npos) << tiny.out;
  auto over = RunTool("benchmark", std::string(kTinyLeNet) + "--precision fp32 --mem_limit_mb 2");
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_NE(over.out.find("out of memory"), std::string::npos) << over.out;
}

// --ceiling: the step's FLOPs per image are LeNet's, counted by hand (convolutions and FCs,
// forward, both gradients but conv1's input gradient: 13.182 MFLOP; the element-wise ops and the
// update add ~1.5 % at batch 16); the ceiling is the best GEMM rate over them and the share this
// run's images/s over the ceiling, in the JSON, the CSV and the table.
TEST(BenchmarkTest, CeilingIsTheGemmRateOverTheStepsFlopsPerImage) {
  const std::string json = TestTempDir() + "/ceiling.json", csv = TestTempDir() + "/ceiling.csv";
  auto r = RunTool("benchmark",
                   "--model lenet --precision fp32,bf16 --batch_size 16 --iters 2 "
                   "--warmup 1 --threads 1 --ceiling --json " +
                       json + " --csv " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GEMM ceiling (1 threads;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  fp32: oneDNN sgemm "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OpenBLAS sgemm ("), std::string::npos) << r.out;
  const std::vector<std::string> results = ResultObjects(ReadFile(json));
  ASSERT_EQ(results.size(), 2u);
  const double lenet =
      2 * (3 * (20 * 24 * 24 * 25 + 50 * 8 * 8 * 500 + 800 * 500 + 500 * 10) - 20 * 24 * 24 * 25) /
      1e9;
  for (const std::string& o : results) {
    const double per_image = Number(o, "gflop_per_image"), gemm = Number(o, "gemm_gflops_per_sec");
    const double ceiling = Number(o, "ceiling_images_per_sec");
    EXPECT_GE(per_image, lenet) << o;
    EXPECT_LE(per_image, 1.05 * lenet) << o;
    EXPECT_GT(gemm, 1) << o;
    EXPECT_NEAR(ceiling, gemm / per_image, 1e-4 * ceiling) << o;
    EXPECT_NEAR(Number(o, "share_of_ceiling"), Number(o, "images_per_sec") / ceiling, 1e-4) << o;
    EXPECT_LT(Number(o, "share_of_ceiling"), 1) << o;
  }
  const std::vector<std::string> head = CsvCells(ReadFile(csv), 0),
                                 fp32 = CsvCells(ReadFile(csv), 1);
  ASSERT_EQ(head.size(), fp32.size());
  ASSERT_EQ(head.back(), "share_of_ceiling");
  EXPECT_NEAR(std::stod(fp32.back()), Number(results[0], "share_of_ceiling"), 1e-5);

  // Without the flag: none of it.
  auto plain = RunTool("benchmark", std::string(kTinyLeNet) + "--precision fp32 --json " + json);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("GEMM ceiling"), std::string::npos);
  EXPECT_EQ(ReadFile(json).find("ceiling"), std::string::npos);
}

TEST(BenchmarkTest, BadFlagsGiveOneClearErrorLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "give --model"},
      {"--model vgg", "--model must be resnet50, resnet18, lenet or acgan"},
      {"--model lenet --net x.pbtxt", "not both"},
      {"--net x.pbtxt", "--net needs --init_net"},
      {"--net x.pbtxt --init_net y.pbtxt", "--input_shape"},
      {"--model lenet --precision fp8", "--precision: expected fp32, fp16 and/or bf16, got 'fp8'"},
      {"--model lenet --batch_size 0", "--batch_size: values must be positive"},
      {"--model lenet --batch_size 8,abc", "--batch_size: 'abc' is not an integer"},
      {"--model lenet --mode infer", "--mode must be train or forward"},
      {"--model lenet --order nhwc", "--order must be NCHW or NHWC"},
      {"--model lenet --device tpu", "--device must be cpu or cuda"},
      {"--model lenet --iters 0", "--iters must be positive"},
      {"--model lenet --per_op --per_op_top -1", "--per_op_top must be >= 0, got -1"},
      {"--model lenet --compare pytorch",
       "--compare pytorch needs --model resnet50, resnet18 or acgan"},
      {"--model resnet18 --compare tensorflow", "--compare must be pytorch, ort or pytorch,ort"},
      {"--model resnet18 --compare ort,tf", "--compare must be pytorch, ort or pytorch,ort"},
      {"--model lenet --compare ort",
       "--compare ort times inference in ONNX Runtime: it needs "
       "--mode forward, got --mode train"},
      {"--model resnet18 --mode train --compare pytorch,ort", "needs --mode forward"},
      {"--model lenet --mode forward --compare ort --device cuda", "it needs --device cpu"},
      {"--model lenet --mode forward --compare ort --order NHWC", "use --order NCHW"},
      {"--model lenet --mode forward --compare pytorch,ort", "--compare pytorch needs --model"},
      {"--model lenet --batch_size 2 extra", "unexpected argument 'extra'"},
      {"--model lenet --batch_size 9 --replicas 2",
       "--batch_size 9 is not a multiple of the number of replicas (2)"},
      {"--model lenet --replicas 2 --mode forward", "(--mode train)"},
      {"--model resnet18 --replicas 2 --compare pytorch", "the peer trains on one device"},
      {"--model lenet --gpus 0,one", "--gpus: 'one' is not a GPU id"},
      {"--model lenet --ws_nbytes_limit -1", "--ws_nbytes_limit must be >= 0, got -1"},
      {"--model lenet --max_batch", "--max_batch on CPU needs --mem_limit_mb"},
      {"--model lenet --mem_limit_mb -5", "--mem_limit_mb must be >= 0"},
      {"--model lenet --max_batch --mem_limit_mb 100 --replicas 2", "--max_batch searches one"},
      {"--model lenet --device cpu --gpus 0,1", "--gpus runs on CUDA devices"},
      {"--model lenet --ceiling --replicas 2", "--ceiling measures the CPU's GEMM rate"},
      {"--model lenet --ceiling --max_batch --mem_limit_mb 100", "no --num_shards, --replicas"},
      {"--net /nonexistent.pbtxt --init_net /nonexistent2.pbtxt --input_shape 1,28,28",
       "/nonexistent"},
  };
  for (const auto& c : cases) {
    auto r = RunTool("benchmark", c.first);
    EXPECT_EQ(r.exit_code, 1) << c.first;
    EXPECT_EQ(CountLines(r.err), 1) << c.first << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("benchmark: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.second), std::string::npos) << c.first << "\n" << r.err;
  }
}

#ifndef HALFCAF_WITH_CUDA
TEST(BenchmarkTest, CudaWithoutTheBackendIsAClearError) {
  for (const char* mode : {"train", "forward"}) {
    auto r = RunTool("benchmark", std::string("--model lenet --device cuda --mode ") + mode);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("--device cuda needs the CUDA backend"), std::string::npos) << r.err;
  }
}
#endif

}  // namespace
}  // namespace testing
}  // namespace halfcaf
