#include "models/imported_model.h"

#include <algorithm>

#include "core/argument.h"
#include "core/operator.h"
#include "models/op_types.h"

namespace halfcaf {

TrainableNets MakeTrainable(const ImportedNet& net, const ImportedTrainingOptions& o) {
  HALFCAF_ENFORCE(net.inputs.size() == 1, "training an imported model needs exactly one input "
                  "(the images); this one has ", net.inputs.size());
  TrainableNets t;
  t.init = net.init;
  t.blob_dims = net.blob_dims;
  t.data_blob = net.inputs[0].name;
  NetDef fwd = net.predict;
  // The logits: the user's, else the input of a final Softmax (dropped), else the only output.
  std::string logits = o.logits;
  if (logits.empty()) {
    HALFCAF_ENFORCE(net.outputs.size() == 1, "the model has ", net.outputs.size(),
                    " outputs: name the one to train with --logits");
    logits = net.outputs[0].name;
    if (fwd.op_size() > 0 && fwd.op(fwd.op_size() - 1).type() == "Softmax" &&
        fwd.op(fwd.op_size() - 1).output(0) == logits) {
      logits = fwd.op(fwd.op_size() - 1).input(0);
      fwd.mutable_op()->RemoveLast();
    }
  }
  bool produced = false;
  for (const auto& op : fwd.op()) {
    produced |= std::find(op.output().begin(), op.output().end(), logits) != op.output().end();
  }
  HALFCAF_ENFORCE(produced, "no op of the model writes the logits blob '", logits, "'");
  t.logits = logits;
  // BatchNormalization trains: batch statistics, running ones updated in place. ONNX's spec
  // blends the biased batch variance into the running one; PyTorch blends the unbiased one.
  const bool from_pytorch = net.producer == "pytorch";
  for (auto& op : *fwd.mutable_op()) {
    if (op.type() == "Conv" && from_pytorch && op.input_size() > 1 &&
        op.input(1).rfind("onnx::Conv_", 0) == 0) {
      ++t.folded_convs;
    }
    if (op.type() != "SpatialBN") continue;
    ++t.batch_norms;
    if (!ArgumentHelper(op).HasArgument("momentum")) SetArgument(&op, "momentum", o.bn_momentum);
    if (from_pytorch) SetArgument(&op, "unbiased_running_var", 1);
    if (ArgumentHelper(op).GetSingleArgument<int>("is_test", 0) == 0) continue;  // a training export
    SetArgument(&op, "is_test", 0);
    const std::string y = op.output(0);
    op.clear_output();
    for (const auto& out : {y, op.input(3), op.input(4), y + "_saved_mean", y + "_saved_inv_std"}) {
      op.add_output(out);
    }
  }
  // A new classifier for another number of classes.
  if (o.num_classes > 0) {
    OperatorDef* fc = nullptr;
    for (auto& op : *fwd.mutable_op()) {
      if (IsFCType(op.type()) && op.output(0) == logits) fc = &op;
    }
    HALFCAF_ENFORCE(fc != nullptr, "--num_classes: the logits '", logits, "' do not come from an "
                    "FC / Gemm layer whose size could change");
    const bool transposed = fc->type() == "FCTransposed";
    const std::string w = fc->input(1), b = fc->input(2);
    std::vector<int64_t> wdims;
    for (const auto& op : t.init.op()) {
      if (op.output(0) == w) wdims = ArgumentHelper(op).GetRepeatedArgument<int64_t>("shape");
    }
    HALFCAF_ENFORCE(wdims.size() == 2, "--num_classes: the classifier's weight '", w,
                    "' is not a constant of the model");
    const int64_t classes = transposed ? wdims[1] : wdims[0];
    const int64_t k = transposed ? wdims[0] : wdims[1];
    if (classes != o.num_classes) {
      NetDef init;
      init.set_name(t.init.name());
      for (const auto& op : t.init.op()) {
        if (op.output(0) != w && op.output(0) != b) *init.add_op() = op;
      }
      *init.add_op() = MakeOperatorDef(
          "XavierFill", "", {}, {w},
          {MakeArgument("shape", transposed ? std::vector<int64_t>{k, o.num_classes}
                                            : std::vector<int64_t>{o.num_classes, k})});
      *init.add_op() = MakeOperatorDef(
          "ConstantFill", "", {}, {b},
          {MakeArgument("shape", std::vector<int64_t>{o.num_classes}), MakeArgument("value", 0.f)});
      t.init = init;
      t.replaced_classifier = true;
      for (const auto& name : {w, b, logits}) t.blob_dims.erase(name);
    }
  }
  const std::string softmax = logits + "_softmax";
  *fwd.add_op() = MakeOperatorDef("SoftmaxWithLoss", "", {logits, o.label_blob},
                                  {softmax, o.loss_blob});
  *fwd.add_op() = MakeOperatorDef("Accuracy", "", {softmax, o.label_blob}, {o.accuracy_blob});
  fwd.set_name(net.predict.name() + "_train");
  t.forward = fwd;
  return t;
}

}  // namespace halfcaf
