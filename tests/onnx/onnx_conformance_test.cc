// ONNX's own backend tests as halfcaf's conformance suite: every case under Debian's
// libonnx-testdata (/usr/share/libonnx-testdata/data/{node,simple,pytorch-converted,
// pytorch-operator}) is imported, run on the CPU and its outputs compared with the expected ones
// (ONNX's backend tolerances: rtol 1e-3, atol 1e-7). Each case is
//   pass         every output matches (a node that needs an input as a constant, e.g. Resize's
//                scales, gets that input's test value fixed at import and the case is retried;
//                the report says which inputs were fixed),
//   unsupported  the importer refused a node, attribute or type (OnnxUnsupported), or an
//                operator refused its input at run time, with the reason,
//   fail         an output differs (a wrong answer) — the only thing that fails the test.
// The counts and the reasons are printed, and written to $HALFCAF_ONNX_REPORT when set.
// bfloat16: ONNX 1.12's test data stores bfloat16 tensors as UINT16 bit patterns (read here as
// bfloat16 where the model says BFLOAT16), and its reference Cast truncates to bfloat16 where
// halfcaf rounds to nearest even: bfloat16 outputs may be one bit pattern above (CompareBFloat16).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/bfloat16.h"
#include "core/half.h"
#include "core/workspace.h"
#include "onnx/onnx_import.h"

namespace halfcaf {
namespace testing {
namespace {

const char kData[] = "/usr/share/libonnx-testdata/data/";

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

double Value(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::FLOAT: return t.data<float>()[i];
    case DataType::FLOAT16: return static_cast<float>(t.data<Half>()[i]);
    case DataType::BFLOAT16: return static_cast<float>(t.data<BFloat16>()[i]);
    case DataType::DOUBLE: return t.data<double>()[i];
    case DataType::INT32: return t.data<int32_t>()[i];
    case DataType::INT64: return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::INT8: return t.data<int8_t>()[i];
    case DataType::UINT8: return t.data<uint8_t>()[i];
    case DataType::INT16: return t.data<int16_t>()[i];
    case DataType::UINT16: return t.data<uint16_t>()[i];
    case DataType::BOOL: return t.data<bool>()[i] ? 1 : 0;
    default: return NAN;
  }
}

// ONNX 1.12's test data stores bfloat16 tensors (the model says BFLOAT16) as UINT16 bit
// patterns: the same bits, as bfloat16.
Tensor AsBFloat16(const Tensor& t) {
  Tensor b(t.dims(), DataType::BFLOAT16);
  if (t.nbytes() > 0) std::memcpy(b.raw_mutable_data(), t.raw_data(), t.nbytes());
  return b;
}

// bfloat16 outputs, bit patterns: ONNX 1.12's reference Cast truncates float to bfloat16 where
// halfcaf (and later ONNX references) round to nearest even, so a pattern may be one above.
std::string CompareBFloat16(const std::string& name, const Tensor& got, const Tensor& want) {
  for (int64_t i = 0; i < want.numel(); ++i) {
    const uint16_t g = got.data<BFloat16>()[i].x, w = want.data<BFloat16>()[i].x;
    const bool nan = std::isnan(Value(got, i)) && std::isnan(Value(want, i));
    if (g != w && g != w + 1 && !nan) {
      std::ostringstream why;
      why << "output '" << name << "' [" << i << "] = bfloat16 bits " << std::hex << g
          << ", expected " << w;
      return why.str();
    }
  }
  return "";
}

// "" when `got` matches `want` within ONNX's tolerances, else what differs.
std::string Compare(const std::string& name, const Tensor& got, const Tensor& want) {
  std::ostringstream why;
  if (got.dims() != want.dims()) {
    why << "output '" << name << "' has dims " << DimsString(got.dims()) << ", expected "
        << DimsString(want.dims());
    return why.str();
  }
  if (got.dtype() == DataType::BFLOAT16 && want.dtype() == DataType::UINT16) {
    return CompareBFloat16(name, got, AsBFloat16(want));
  }
  const bool exact = want.dtype() != DataType::FLOAT && want.dtype() != DataType::FLOAT16 &&
                     want.dtype() != DataType::DOUBLE;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = Value(got, i), w = Value(want, i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    const bool ok = exact ? g == w : std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w);
    if (!ok) {
      why << "output '" << name << "' [" << i << "] = " << g << ", expected " << w;
      return why.str();
    }
  }
  if (exact && got.dtype() != want.dtype() &&
      !(got.dtype() == DataType::INT64 && want.dtype() == DataType::INT64)) {
    why << "output '" << name << "' is " << DataTypeName(got.dtype()) << ", expected "
        << DataTypeName(want.dtype());
    return why.str();
  }
  return "";
}

struct Outcome {
  std::string kind;  // pass | unsupported | fail
  std::string why;
};

// A training-mode Dropout with ratio r > 0 of the predict net, or nullptr. Its output is random,
// so it cannot equal the reference's; CheckDropout checks what it must be instead.
const OperatorDef* RandomDropout(const NetDef& net) {
  for (const auto& op : net.op()) {
    ArgumentHelper a(op);
    if (op.type() == "Dropout" && a.GetSingleArgument<int>("is_test", 0) == 0 &&
        a.GetSingleArgument<float>("ratio", 0.5f) > 0.f) {
      return &op;
    }
  }
  return nullptr;
}

// Every element of Y is 0 (dropped) or X / (1 - ratio) (kept), the mask (when the node has one)
// says which, and the kept fraction is within 5 standard deviations of 1 - ratio.
std::string CheckDropout(const OperatorDef& op, const Workspace& ws) {
  const float ratio = ArgumentHelper(op).GetSingleArgument<float>("ratio", 0.5f);
  const Tensor& x = ws.GetTensor(op.input(0));
  const Tensor& y = ws.GetTensor(op.output(0));
  const Tensor* mask = op.output_size() > 1 ? &ws.GetTensor(op.output(1)) : nullptr;
  if (y.numel() != x.numel()) return "random Dropout: Y's size differs from X's";
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = Value(x, i), yi = Value(y, i), scaled = xi / (1.0 - ratio);
    const bool keep = mask ? mask->data<bool>()[i] : yi != 0.0;
    kept += keep;
    const double want = keep ? scaled : 0.0;
    if (std::fabs(yi - want) > 1e-6 + 1e-5 * std::fabs(want)) {
      return "random Dropout: Y[" + std::to_string(i) + "] = " + std::to_string(yi) +
             ", expected " + std::to_string(want);
    }
  }
  const double n = static_cast<double>(x.numel()), p = 1.0 - ratio;
  if (std::fabs(kept - n * p) > 5 * std::sqrt(n * p * ratio) + 1) {
    return "random Dropout: kept " + std::to_string(kept) + " of " + std::to_string(x.numel());
  }
  return "";
}

// The name of the input a refusal says must be a constant ("... input 'scales' is computed at
// run time ..."), or "".
std::string RunTimeInput(const std::string& why) {
  const size_t at = why.find("' is computed at run time");
  if (at == std::string::npos) return "";
  const size_t open = why.rfind('\'', at - 1);
  return open == std::string::npos ? "" : why.substr(open + 1, at - open - 1);
}

Outcome RunCase(const std::string& dir) {
  ImportedNet net;
  OnnxImportOptions options;
  std::string frozen;
  for (int attempt = 0;; ++attempt) {
    try {
      net = ImportOnnxFile(dir + "/model.onnx", options);
      break;
    } catch (const OnnxUnsupported& e) {
      // Fix the named input to its test value (test data set 0) and try again.
      const std::string input = RunTimeInput(e.message());
      bool fixed = false;
      for (int i = 0; !input.empty() && attempt < 4 && !fixed; ++i) {
        const std::string path = dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
        if (!IsFile(path)) break;
        Tensor t;
        std::string name;
        ReadOnnxTensorFile(path, &t, &name);
        if (name != input) continue;
        options.constant_inputs[name] = t;
        frozen += (frozen.empty() ? "" : ", ") + name;
        fixed = true;
      }
      if (!fixed) return {"unsupported", e.message()};
    } catch (const EnforceNotMet& e) {
      return {"unsupported", "import: " + e.message()};
    }
  }
  int sets = 0;
  for (const auto& set : List(dir)) {
    if (set.rfind("test_data_set_", 0) != 0) continue;
    if (!frozen.empty() && set != "test_data_set_0") continue;
    ++sets;
    const std::string sd = dir + "/" + set;
    Workspace ws;
    try {
      ws.RunNetOnce(net.init);
      // The inputs by position, skipping the ones fixed at import (they must keep the value
      // they were fixed to: only data set 0 runs then).
      int k = 0;
      for (int i = 0;; ++i) {
        const std::string path = sd + "/input_" + std::to_string(i) + ".pb";
        if (!IsFile(path)) break;
        Tensor t;
        std::string name;
        ReadOnnxTensorFile(path, &t, &name);
        if (options.constant_inputs.count(name)) continue;
        if (k >= static_cast<int>(net.inputs.size())) break;
        const OnnxValueInfo& input = net.inputs[k++];
        if (input.dtype == DataType::BFLOAT16 && t.dtype() == DataType::UINT16) t = AsBFloat16(t);
        ws.CreateTensor(input.name)->CopyFrom(t);
      }
      if (k != static_cast<int>(net.inputs.size())) {
        return {"unsupported", "test data " + sd + " lacks inputs"};
      }
      NetDef predict = net.predict;
      ws.RunNetOnce(predict);
    } catch (const EnforceNotMet& e) {
      return {"unsupported", "run: " + e.message()};
    }
    if (const OperatorDef* dropout = RandomDropout(net.predict)) {
      const std::string why = CheckDropout(*dropout, ws);
      if (!why.empty()) return {"fail", set + ": " + why};
      continue;
    }
    for (size_t i = 0; i < net.outputs.size(); ++i) {
      Tensor want;
      ReadOnnxTensorFile(sd + "/output_" + std::to_string(i) + ".pb", &want);
      const Blob* b = ws.GetBlob(net.outputs[i].name);
      if (!b || !b->IsTensor()) return {"fail", "output '" + net.outputs[i].name + "' missing"};
      Tensor got;
      got.CopyFrom(b->GetTensor());
      const std::string why = Compare(net.outputs[i].name, got, want);
      if (!why.empty()) return {"fail", set + ": " + why};
    }
  }
  if (sets == 0) return {"unsupported", "no test data sets"};
  return {"pass", frozen.empty() ? "" : "inputs fixed at import: " + frozen};
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first line of a reason, without the source location, for grouping.
std::string Short(const std::string& why) {
  std::string s = why.substr(0, why.find('\n'));
  const size_t at = s.rfind(" [");
  if (at != std::string::npos && s.back() == ']') s = s.substr(0, at);
  return s.size() > 160 ? s.substr(0, 157) + "..." : s;
}

class OnnxConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxConformanceTest, NoWrongAnswers) {
  if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
  const std::string folder = std::string(kData) + GetParam();
  if (!IsDir(folder)) GTEST_SKIP() << folder << " is missing (install libonnx-testdata)";
  std::map<std::string, int> counts;
  std::ostringstream report;
  for (const auto& name : List(folder)) {
    const std::string dir = folder + "/" + name;
    if (!IsFile(dir + "/model.onnx")) continue;
    const Outcome o = RunCase(dir);
    ++counts[o.kind];
    report << GetParam() << "/" << name << "\t" << o.kind << "\t" << Short(o.why) << "\n";
    EXPECT_NE(o.kind, "fail") << name << ": " << o.why;
  }
  int fixed = 0;
  for (const auto& line : Split(report.str())) fixed += line.find("\tpass\tinputs fixed") != std::string::npos;
  std::cout << "onnx conformance " << GetParam() << ": " << counts["pass"] << " pass ("
            << fixed << " with inputs fixed at import), "
            << counts["unsupported"] << " unsupported, " << counts["fail"] << " fail"
            << std::endl;
  if (const char* out = std::getenv("HALFCAF_ONNX_REPORT")) {
    std::ofstream(std::string(out) + "." + GetParam() + ".tsv") << report.str();
  }
}

INSTANTIATE_TEST_SUITE_P(Folders, OnnxConformanceTest,
                         ::testing::Values("node", "simple", "pytorch-converted",
                                           "pytorch-operator"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace testing
}  // namespace halfcaf
