// Comparing a model's outputs in halfcaf and in ONNX Runtime, from tests. ONNX Runtime lives in
// the virtual environment tools/setup_ort.sh makes (<repo>/.venv-ort); callers check for it with
// tests/util/peer.h (Peer::kOnnxRuntime).
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/tools/tool_test_util.h"
#include "tests/util/peer.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {

// Runs the model in onnxruntime on random input (seeded) and in halfcaf (run_net on the same
// file), and compares; prints "max_diff <x> scale <y>".
const char kOrtCompareScript[] = R"PY(
import sys, subprocess, numpy as np, onnxruntime as ort
from onnx import numpy_helper
model, shape, run_net, work = sys.argv[1], [int(v) for v in sys.argv[2].split(",")], sys.argv[3], sys.argv[4]
s = ort.InferenceSession(model)
x = np.random.RandomState(0).rand(*shape).astype(np.float32)
y = s.run(None, {s.get_inputs()[0].name: x})[0]
open(f"{work}/x.pb", "wb").write(numpy_helper.from_array(x, s.get_inputs()[0].name).SerializeToString())
out = subprocess.run([run_net, "--net", model, "--onnx_inputs", f"{work}/x.pb"], check=True,
                     capture_output=True, text=True).stdout
is_int = y.dtype == np.int64
field = "int64_data:" if is_int else "float_data:"
vals = [float(l.split(":")[1]) for l in out.splitlines() if l.strip().startswith(field)]
got = np.array(vals, dtype=np.float64).reshape(y.shape)
scale = float(np.abs(y).max())
print("max_diff", float(np.abs(got - y.astype(np.float64)).max()), "scale", max(scale, 1.0) if is_int else scale)
)PY";

// max |halfcaf - onnxruntime| / max |onnxruntime| for `model` on a random input of `shape`
// ("1,3,224,224"); `work` is a scratch folder. A failed run fails the test and returns 1e9.
inline double OrtRelativeDifference(const std::string& model, const std::string& shape,
                                    const std::string& work) {
  std::ofstream(work + "/ort_compare.py") << kOrtCompareScript;
  auto r = RunShell(OrtPython() + " " + work + "/ort_compare.py " + model + " " + shape + " " +
                    HALFCAF_BIN_DIR + "/run_net " + work);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const size_t a = r.out.find("max_diff "), b = r.out.find(" scale ");
  if (a == std::string::npos || b == std::string::npos) return 1e9;
  return std::stod(r.out.substr(a + 9)) / std::max(1e-30, std::stod(r.out.substr(b + 7)));
}

}  // namespace testing
}  // namespace halfcaf
