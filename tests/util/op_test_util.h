// Helpers for operator tests: random tensors, running one op in a workspace, comparing tensors,
// and the FP16-vs-FP32 check every numeric operator gets.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/float_io.h"
#include "core/operator.h"
#include "core/workspace.h"

namespace halfcaf {
namespace testing {

// A float tensor with values uniform in [lo, hi], seeded.
inline Tensor RandomTensor(std::vector<int64_t> dims, uint32_t seed, float lo = -1.f,
                           float hi = 1.f) {
  Tensor t(std::move(dims), DataType::FLOAT);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  float* d = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = u(rng);
  return t;
}

// Values uniform in [lo, hi] but at least `gap` away from every point in `kinks` (e.g. 0 for Relu).
inline Tensor RandomTensorAwayFrom(std::vector<int64_t> dims, uint32_t seed,
                                   std::vector<float> kinks, float gap, float lo = -1.f,
                                   float hi = 1.f) {
  Tensor t = RandomTensor(std::move(dims), seed, lo, hi);
  float* d = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    for (float k : kinks) {
      if (std::fabs(d[i] - k) < gap) d[i] = k + (d[i] >= k ? gap : -gap) * (1.5f);
    }
  }
  return t;
}

inline Tensor IntTensor(std::vector<int64_t> dims, std::vector<int32_t> values) {
  Tensor t(std::move(dims), DataType::INT32);
  std::copy(values.begin(), values.end(), t.mutable_data<int32_t>());
  return t;
}

// A 1-element int64 tensor (an iteration counter, as Iter makes it).
inline Tensor Int64Scalar(int64_t v) {
  Tensor t({1}, DataType::INT64);
  t.mutable_data<int64_t>()[0] = v;
  return t;
}

inline Tensor FloatTensor(std::vector<int64_t> dims, std::vector<float> values) {
  Tensor t(std::move(dims), DataType::FLOAT);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  std::copy(values.begin(), values.end(), t.mutable_data<float>());
  return t;
}

// Values of a float, float16 or bfloat16 tensor as a vector of floats.
inline std::vector<float> ToFloatVector(const Tensor& t) {
  std::vector<float> scratch;
  const float* p = ReadAsFloat(t, &scratch);
  return std::vector<float>(p, p + t.numel());
}

// A float tensor's values rounded (to nearest even) into `dtype`: FLOAT16 or BFLOAT16.
inline Tensor ToFloat16Type(const Tensor& t, DataType dtype) {
  Tensor out(t.dims(), dtype);
  std::vector<float> scratch;
  FloatWriter w(&out, dtype, &scratch);
  std::copy(t.data<float>(), t.data<float>() + t.numel(), w.data());
  w.Commit();
  return out;
}
inline Tensor ToHalf(const Tensor& t) { return ToFloat16Type(t, DataType::FLOAT16); }
inline Tensor ToBFloat16(const Tensor& t) { return ToFloat16Type(t, DataType::BFLOAT16); }

// Float copy of t's values rounded into `dtype` (what an FP32 op sees when fed the same rounded
// data).
inline Tensor RoundThrough(const Tensor& t, DataType dtype) {
  const Tensor rounded = ToFloat16Type(t, dtype);
  std::vector<float> scratch;
  const float* v = ReadAsFloat(rounded, &scratch);
  Tensor f(t.dims(), DataType::FLOAT);
  std::copy(v, v + f.numel(), f.mutable_data<float>());
  return f;
}
inline Tensor RoundThroughHalf(const Tensor& t) { return RoundThrough(t, DataType::FLOAT16); }
inline Tensor RoundThroughBFloat16(const Tensor& t) { return RoundThrough(t, DataType::BFLOAT16); }

// The largest absolute difference of `got` from `want` over the largest |want| (a reference
// computed in double).
inline double MaxRelativeError(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::fabs(got[i] - want[i]));
    ref = std::max(ref, std::fabs(want[i]));
  }
  return diff / ref;
}

inline void SetInput(Workspace* ws, const std::string& name, const Tensor& value) {
  ws->CreateTensor(name)->CopyFrom(value);
}

// Feeds `inputs`, creates the op and runs it once; returns nothing (read outputs from ws).
inline void RunOp(const OperatorDef& def, const std::map<std::string, Tensor>& inputs,
                  Workspace* ws) {
  for (const auto& kv : inputs) SetInput(ws, kv.first, kv.second);
  auto op = CreateOperator(def, ws);
  op->Run(0);
}

// Runs an op and returns its first output as floats.
inline std::vector<float> RunAndGet(const OperatorDef& def,
                                    const std::map<std::string, Tensor>& inputs,
                                    int output = 0) {
  Workspace ws;
  RunOp(def, inputs, &ws);
  return ToFloatVector(ws.GetTensor(def.output(output)));
}

// Runs `def` through the implementation registered for `engine` ("" = the default).
inline void RunWithEngine(const OperatorDef& def, const std::map<std::string, Tensor>& in,
                          const std::string& engine, Workspace* ws) {
  for (const auto& kv : in) SetInput(ws, kv.first, kv.second);
  const OperatorCreator* creator = OperatorRegistry::Find(DeviceType::CPU, def.type(), engine);
  ASSERT_NE(creator, nullptr) << def.type() << " engine '" << engine << "'";
  auto op = (*creator)(def, ws);
  op->Run(0);
}

// Runs an op (RunOp) and returns copies of all its outputs, in order.
inline std::vector<Tensor> RunOpOutputs(const OperatorDef& def,
                                        const std::map<std::string, Tensor>& inputs) {
  Workspace ws;
  RunOp(def, inputs, &ws);
  std::vector<Tensor> out;
  for (const auto& name : def.output()) {
    out.emplace_back();
    out.back().CopyFrom(ws.GetTensor(name));
  }
  return out;
}

// Element-wise |a - b| <= atol + rtol * |b|.
inline void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float atol,
                       float rtol, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i]))
        << what << " element " << i;
  }
}

// Runs `def` with engine `engine` and with the default implementation on the same inputs, and
// expects every output to have the same dims and dtype and values within `tol` (absolute and
// relative).
inline void ExpectEngineMatchesDefault(const OperatorDef& def,
                                       const std::map<std::string, Tensor>& in,
                                       const std::string& engine, float tol) {
  Workspace got_ws, want_ws;
  RunWithEngine(def, in, engine, &got_ws);
  RunWithEngine(def, in, "", &want_ws);
  for (const auto& out : def.output()) {
    const Tensor& got = got_ws.GetTensor(out);
    const Tensor& want = want_ws.GetTensor(out);
    EXPECT_EQ(got.dims(), want.dims()) << out;
    EXPECT_EQ(got.dtype(), want.dtype()) << out;
    ExpectNear(ToFloatVector(got), ToFloatVector(want), tol, tol, def.type() + " " + out);
  }
}

// Low precision vs FP32: runs `def` once with every input named in `low_inputs` fed as `dtype`
// (FLOAT16 or BFLOAT16), and once with the same (rounded) values as float; the outputs listed in
// `outputs` must agree within `atol` + `rtol` relative (outputs are rounded once: 2^-11 relative
// for float16, 2^-8 for bfloat16, plus what the op's own arithmetic adds).
inline void CheckLowPrecisionMatchesFp32(const OperatorDef& def,
                                         const std::map<std::string, Tensor>& inputs,
                                         const std::vector<std::string>& low_inputs,
                                         DataType dtype, const std::vector<int>& outputs,
                                         float atol, float rtol) {
  std::map<std::string, Tensor> in32, in16;
  for (const auto& kv : inputs) {
    bool low = std::find(low_inputs.begin(), low_inputs.end(), kv.first) != low_inputs.end();
    if (low) {
      in32[kv.first] = RoundThrough(kv.second, dtype);
      in16[kv.first] = ToFloat16Type(kv.second, dtype);
    } else {
      in32[kv.first].CopyFrom(kv.second);
      in16[kv.first].CopyFrom(kv.second);
    }
  }
  Workspace ws32, ws16;
  RunOp(def, in32, &ws32);
  RunOp(def, in16, &ws16);
  for (int o : outputs) {
    const Tensor& t16 = ws16.GetTensor(def.output(o));
    const Tensor& t32 = ws32.GetTensor(def.output(o));
    EXPECT_EQ(t16.dims(), t32.dims()) << def.type() << " output " << o;
    ExpectNear(ToFloatVector(t16), ToFloatVector(t32), atol, rtol,
               def.type() + " " + DataTypeName(dtype) + " vs float, output " + std::to_string(o));
  }
}

// FP16 vs FP32 and BF16 vs FP32 (CheckLowPrecisionMatchesFp32 with float16, then with bfloat16
// and 8 times the tolerances: bfloat16 keeps 3 fewer significant bits). Every operator's FP16
// agreement test covers bfloat16 too.
inline void CheckFp16MatchesFp32(const OperatorDef& def,
                                 const std::map<std::string, Tensor>& inputs,
                                 const std::vector<std::string>& half_inputs,
                                 const std::vector<int>& outputs = {0}, float atol = 1e-3f,
                                 float rtol = 2e-3f) {
  CheckLowPrecisionMatchesFp32(def, inputs, half_inputs, DataType::FLOAT16, outputs, atol, rtol);
  CheckLowPrecisionMatchesFp32(def, inputs, half_inputs, DataType::BFLOAT16, outputs, 8 * atol,
                               8 * rtol);
}

// Feeds `inputs` into `ws` (a fresh workspace when null), creates `def` and runs it once, and
// returns the message of the EnforceNotMet that throws (a test failure, and "", when none does).
inline std::string RunOpError(const OperatorDef& def,
                              const std::map<std::string, Tensor>& inputs = {},
                              Workspace* ws = nullptr) {
  Workspace own;
  try {
    RunOp(def, inputs, ws ? ws : &own);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error from " << def.type();
  return "";
}

// Runs `def` on `inputs` and expects an EnforceNotMet whose message contains `substr`.
inline void ExpectError(const OperatorDef& def, const std::map<std::string, Tensor>& inputs,
                        const std::string& substr) {
  const std::string e = RunOpError(def, inputs);
  EXPECT_NE(e.find(substr), std::string::npos) << "expected an error containing '" << substr
                                               << "', got: " << e;
}

}  // namespace testing
}  // namespace halfcaf
