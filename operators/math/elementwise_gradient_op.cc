#include "operators/math/elementwise_gradient_op.h"

#include <algorithm>
#include <utility>

#include "core/float_io.h"

namespace halfcaf {

NumpyBroadcast MakeGradientBroadcast(const std::string& op, const LegacyBroadcastArgs& args,
                                     const std::vector<int64_t>& dc_dims,
                                     const std::vector<int64_t>& a_dims,
                                     const std::vector<int64_t>& b_dims) {
  NumpyBroadcast s = MakeNumpyBroadcast(
      op, a_dims, args.broadcast ? LegacyBroadcastView(a_dims, b_dims, args.axis) : b_dims);
  HALFCAF_ENFORCE(dc_dims == s.out_dims, op, ": dC has dims ", DimsString(dc_dims),
                  " but A with dims ", DimsString(a_dims), " and B with dims ", DimsString(b_dims),
                  " broadcast to ", DimsString(s.out_dims));
  return s;
}

GradientInputs CheckGradientInputs(BinaryGradientKind kind, const std::string& op,
                                   const LegacyBroadcastArgs& args, const Tensor& dC,
                                   const Tensor& A, const Tensor& B, const Tensor* C) {
  GradientInputs in{&dC, &A, &B, C, {}, false};
  in.walk = MakeGradientBroadcast(op, args, dC.dims(), A.dims(), B.dims());
  if (C) {
    HALFCAF_ENFORCE(C->dims() == dC.dims(), op, ": C has dims ", DimsString(C->dims()),
                    " but dC has dims ", DimsString(dC.dims()));
  }
  const Tensor* read[] = {&dC, GradientReadsA(kind) ? &A : nullptr,
                          GradientReadsB(kind) ? &B : nullptr, C};
  const char* names[] = {"dC", "A", "B", "C"};
  in.all_double = true;
  for (const Tensor* t : read) in.all_double &= !t || t->dtype() == DataType::DOUBLE;
  if (!in.all_double) {
    for (int i = 0; i < 4; ++i) {
      if (read[i]) EnforceFloatType(*read[i], names[i]);
    }
  }
  return in;
}

void EnforceLegacyDivShapes(const Tensor& B, const Tensor& C, const Tensor& dC) {
  HALFCAF_ENFORCE(B.dims() == C.dims() && C.dims() == dC.dims(),
                  "DivGradient (B, C, dC): B, C and dC must have the same shape, got ",
                  DimsString(B.dims()), ", ", DimsString(C.dims()), " and ", DimsString(dC.dims()),
                  " (the four-input DivGradient (dC, A, B, C) takes broadcast shapes)");
}

template <BinaryGradientKind kKind>
BinaryGradientOp<kKind>::BinaryGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), bargs_(ParseLegacyBroadcastArgs(args_)) {}

template <BinaryGradientKind kKind>
template <typename T>
void BinaryGradientOp<kKind>::Accumulate(const T* dc, const T* a, const T* b, const T* c) {
  double* ga = acc_a_.data();
  double* gb = acc_b_.data();
  if (walk_.numel == 0) return;
  const int64_t inner = walk_.dims.back();
  const int64_t sa = walk_.a_stride.back(), sb = walk_.b_stride.back();
  // Serial: the sums into a repeated input would race between threads.
  WalkBroadcastRuns(walk_, 0, walk_.numel / inner, [&](int64_t ci, int64_t ai, int64_t bi) {
    for (int64_t k = 0; k < inner; ++k) {
      const T g = dc[ci + k];
      const int64_t ia = ai + k * sa, ib = bi + k * sb;
      switch (kKind) {
        case BinaryGradientKind::kAdd:
          ga[ia] += g;
          gb[ib] += g;
          break;
        case BinaryGradientKind::kSub:
          ga[ia] += g;
          gb[ib] -= g;
          break;
        case BinaryGradientKind::kMul:
          ga[ia] += g * b[ib];
          gb[ib] += g * a[ia];
          break;
        case BinaryGradientKind::kDiv: {
          const T q = g / b[ib];
          ga[ia] += q;
          gb[ib] += -q * c[ci + k];
          break;
        }
      }
    }
  });
}

template <BinaryGradientKind kKind>
void BinaryGradientOp<kKind>::RunOnDevice() {
  constexpr bool kDiv = kKind == BinaryGradientKind::kDiv;
  constexpr bool kReadsA = GradientReadsA(kKind);
  constexpr bool kReadsB = GradientReadsB(kKind);
  if (kDiv && InputSize() == 3) {
    RunLegacyDiv();
    return;
  }
  GradientInputs in = CheckGradientInputs(kKind, type(), bargs_, Input(0), Input(1), Input(2),
                                          kDiv ? &Input(3) : nullptr);
  const Tensor &dC = *in.dC, &A = *in.A, &B = *in.B, *C = in.C;
  walk_ = std::move(in.walk);
  acc_a_.assign(static_cast<size_t>(A.numel()), 0.0);
  acc_b_.assign(static_cast<size_t>(B.numel()), 0.0);
  if (in.all_double) {
    Accumulate<double>(dC.data<double>(), kReadsA ? A.data<double>() : nullptr,
                       kReadsB ? B.data<double>() : nullptr, C ? C->data<double>() : nullptr);
    double* da = Output(0, A.dims())->template mutable_data<double>();
    double* db = Output(1, B.dims())->template mutable_data<double>();
    std::copy(acc_a_.begin(), acc_a_.end(), da);
    std::copy(acc_b_.begin(), acc_b_.end(), db);
    return;
  }
  Accumulate<float>(ReadAsFloat(dC, &dc_), kReadsA ? ReadAsFloat(A, &a_) : nullptr,
                    kReadsB ? ReadAsFloat(B, &b_) : nullptr, C ? ReadAsFloat(*C, &c_) : nullptr);
  const DataType out_type = dC.dtype();
  FloatWriter da(Output(0, A.dims()), out_type, &da_);
  FloatWriter db(Output(1, B.dims()), out_type, &db_);
  std::copy(acc_a_.begin(), acc_a_.end(), da.data());
  std::copy(acc_b_.begin(), acc_b_.end(), db.data());
  da.Commit();
  db.Commit();
}

template <BinaryGradientKind kKind>
void BinaryGradientOp<kKind>::RunLegacyDiv() {
  const Tensor& B = Input(0);
  const Tensor& C = Input(1);
  const Tensor& dC = Input(2);
  EnforceLegacyDivShapes(B, C, dC);
  const int64_t n = B.numel();
  if (B.dtype() == DataType::DOUBLE && C.dtype() == DataType::DOUBLE &&
      dC.dtype() == DataType::DOUBLE) {
    const double* b = B.data<double>();
    const double* c = C.data<double>();
    const double* dc = dC.data<double>();
    Tensor* dA = Output(0, B.dims());
    Tensor* dB = Output(1, B.dims());
    double* da = dA->mutable_data<double>();
    double* db = dB->mutable_data<double>();
    for (int64_t i = 0; i < n; ++i) {
      da[i] = dc[i] / b[i];
      db[i] = -da[i] * c[i];
    }
    return;
  }
  EnforceFloatType(B, "B");
  EnforceFloatType(C, "C");
  EnforceFloatType(dC, "dC");
  const float* b = ReadAsFloat(B, &b_);
  const float* c = ReadAsFloat(C, &c_);
  const float* dc = ReadAsFloat(dC, &dc_);
  const DataType da_type = dC.dtype(), db_type = B.dtype();
  FloatWriter da(Output(0, B.dims()), da_type, &da_);
  FloatWriter db(Output(1, B.dims()), db_type, &db_);
  float* dad = da.data();
  float* dbd = db.data();
  for (int64_t i = 0; i < n; ++i) {
    const float g = dc[i] / b[i];
    dad[i] = g;
    dbd[i] = -g * c[i];
  }
  da.Commit();
  db.Commit();
}

namespace {

std::vector<TensorShape> GradientShapes(const OperatorDef&, const std::vector<TensorShape>& in) {
  return {TensorShape{in[1].dims, in[0].dtype}, TensorShape{in[2].dims, in[0].dtype}};
}

void DescribeGradient(OpSchema& s, const std::string& type, const std::string& formulas) {
  s.NumInputs(3)
      .NumOutputs(2)
      .TensorInferenceFunction(GradientShapes)
      .PointwiseCost(2)
      .SetDoc("Gradient of " + type + ": " + formulas +
              ". dC has the shape of the forward output, the broadcast of A and B (NumPy rules, "
              "or Caffe2's legacy broadcast when broadcast=1 and axis / axis_str / order are "
              "given as the forward op had them); dA and dB are summed over the dims their "
              "input was repeated along, so they have A's and B's shapes (read at run time). "
              "Outputs take dC's type. Float, float16 (computed in float, summed in double) "
              "and double.")
      .Arg("broadcast", "bool, default 0: the forward op's legacy broadcast")
      .Arg("axis", "int, default -1: the forward op's axis (with broadcast=1)")
      .Arg("axis_str", "string, default \"\": the forward op's axis_str (with broadcast=1)")
      .Arg("order", "string, default \"NCHW\": the forward op's order (with broadcast=1)")
      .Input(0, "dC", "gradient of the forward output C")
      .Input(1, "A", type == "Mul" ? "forward input A" : "forward input A (only its dims)")
      .Input(2, "B", type == "Mul" ? "forward input B" : "forward input B (only its dims)")
      .Output(0, "dA", "gradient of A, A's shape")
      .Output(1, "dB", "gradient of B, B's shape");
}

[[maybe_unused]] const bool g_gradient_schemas = [] {
  DescribeGradient(OpSchemaRegistry::NewSchema("AddGradient", __FILE__, __LINE__), "Add",
                   "dA = dC, dB = dC");
  DescribeGradient(OpSchemaRegistry::NewSchema("SubGradient", __FILE__, __LINE__), "Sub",
                   "dA = dC, dB = -dC");
  DescribeGradient(OpSchemaRegistry::NewSchema("MulGradient", __FILE__, __LINE__), "Mul",
                   "dA = dC * B, dB = dC * A");
  return true;
}();

}  // namespace

template class BinaryGradientOp<BinaryGradientKind::kAdd>;
template class BinaryGradientOp<BinaryGradientKind::kSub>;
template class BinaryGradientOp<BinaryGradientKind::kMul>;
template class BinaryGradientOp<BinaryGradientKind::kDiv>;

REGISTER_CPU_OPERATOR(AddGradient, BinaryGradientOp<BinaryGradientKind::kAdd>);
REGISTER_CPU_OPERATOR(SubGradient, BinaryGradientOp<BinaryGradientKind::kSub>);
REGISTER_CPU_OPERATOR(MulGradient, BinaryGradientOp<BinaryGradientKind::kMul>);
REGISTER_CPU_OPERATOR(DivGradient, BinaryGradientOp<BinaryGradientKind::kDiv>);

OPERATOR_SCHEMA(DivGradient)
    .NumInputs(3, 4)
    .NumOutputs(2)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      if (in.size() == 3) return std::vector<TensorShape>{in[2], in[0]};  // (B, C, dC)
      return std::vector<TensorShape>{TensorShape{in[1].dims, in[0].dtype},
                                      TensorShape{in[2].dims, in[0].dtype}};
    })
    .PointwiseCost(3)
    .SetDoc("Gradient of Div, in one of two forms. Four inputs (dC, A, B, C), Caffe2 1.0's: "
            "dA = dC / B and dB = -dC * C / B, each summed down to its input's shape as for "
            "AddGradient (any broadcast the forward op accepted; A's values are not read), "
            "outputs in dC's type. Three inputs (B, C, dC), Caffe2's older form: identical "
            "shapes only, dA in dC's type and dB in B's type. Float, float16 (computed in "
            "float) and double.")
    .Arg("broadcast", "bool, default 0: the forward op's legacy broadcast (four inputs)")
    .Arg("axis", "int, default -1: the forward op's axis (with broadcast=1)")
    .Arg("axis_str", "string, default \"\": the forward op's axis_str (with broadcast=1)")
    .Arg("order", "string, default \"NCHW\": the forward op's order (with broadcast=1)")
    .Input(0, "dC | B", "four inputs: gradient of C; three inputs: forward divisor B")
    .Input(1, "A | C", "four inputs: forward dividend A (dims only); three: forward output C")
    .Input(2, "B | dC", "four inputs: forward divisor B; three inputs: gradient of C")
    .Input(3, "C", "four inputs: forward output A / B")
    .Output(0, "dA", "gradient of A")
    .Output(1, "dB", "gradient of B");

}  // namespace halfcaf
