#include "core/gradient.h"

#include <map>

namespace halfcaf {

GradientMakerBase::GradientMakerBase(const OperatorDef& def,
                                     const std::vector<GradientWrapper>& g_output)
    : def_(def), args_(def), g_output_(g_output), g_input_(def.input_size()) {
  HALFCAF_ENFORCE_EQ(static_cast<int>(g_output.size()), def.output_size(),
                     "gradient maker for ", def.type(), ": one output gradient per output");
}

std::string GradientMakerBase::GI(int i) {
  HALFCAF_ENFORCE(!g_input_.at(i).IsSparse(), "input ", i, " already has a sparse gradient");
  g_input_[i].dense = I(i) + "_grad";
  return g_input_[i].dense;
}

std::string GradientMakerBase::GI_I(int i) {
  HALFCAF_ENFORCE(!g_input_.at(i).IsDense(), "input ", i, " already has a dense gradient");
  g_input_[i].indices = I(i) + "_grad_indices";
  return g_input_[i].indices;
}

std::string GradientMakerBase::GI_V(int i) {
  HALFCAF_ENFORCE(!g_input_.at(i).IsDense(), "input ", i, " already has a dense gradient");
  g_input_[i].values = I(i) + "_grad_values";
  return g_input_[i].values;
}

std::string GradientMakerBase::GO(int i) const {
  HALFCAF_ENFORCE(g_output_.at(i).IsDense(), "gradient of output ", i, " ('", O(i), "') of ",
                  def_.type(), " is needed but is not available as a dense blob");
  return g_output_[i].dense;
}

void GradientMakerBase::SetDense(int i, const std::string& name) {
  g_input_.at(i) = GradientWrapper{name, "", ""};
}

void GradientMakerBase::SetInputDims(const std::vector<std::vector<int64_t>>* input_dims) {
  HALFCAF_ENFORCE(input_dims == nullptr ||
                      static_cast<int>(input_dims->size()) == def_.input_size(),
                  "gradient maker for ", def_.type(), ": ", input_dims ? input_dims->size() : 0,
                  " input dims given for ", def_.input_size(), " inputs");
  input_dims_ = input_dims;
}

const std::vector<int64_t>* GradientMakerBase::InputDims(int i) const {
  return input_dims_ ? &input_dims_->at(i) : nullptr;
}

std::vector<OperatorDef> GradientMakerBase::SingleGradientDef(
    const std::string& type, const std::vector<std::string>& inputs,
    const std::vector<std::string>& outputs, const std::vector<Argument>& args) {
  return {MakeOperatorDef(type, "", inputs, outputs, args)};
}

GradientOpsMeta GradientMakerBase::Get() {
  GradientOpsMeta meta;
  meta.ops = GetGradientDefs();
  for (auto& op : meta.ops) {
    if (CopyDeviceOption() && def_.has_device_option()) {
      *op.mutable_device_option() = def_.device_option();
    }
    if (CopyEngine() && def_.has_engine()) op.set_engine(def_.engine());
    if (CopyArguments()) {
      for (const auto& a : def_.arg()) {
        bool already = false;
        for (const auto& b : op.arg()) already |= (b.name() == a.name());
        if (!already) *op.add_arg() = a;
      }
    }
    op.set_is_gradient_op(true);
  }
  meta.g_input = g_input_;
  return meta;
}

namespace {
std::map<std::string, GradientMakerCreator>& Makers() {
  static std::map<std::string, GradientMakerCreator> m;
  return m;
}
}  // namespace

void GradientRegistry::Register(const std::string& type, GradientMakerCreator creator) {
  if (Makers().count(type)) {
    fprintf(stderr, "halfcaf: gradient for %s registered twice\n", type.c_str());
    abort();
  }
  Makers()[type] = std::move(creator);
}

const GradientMakerCreator* GradientRegistry::Find(const std::string& type) {
  auto it = Makers().find(type);
  return it == Makers().end() ? nullptr : &it->second;
}

std::vector<std::string> GradientRegistry::Types() {
  std::vector<std::string> out;
  for (const auto& kv : Makers()) out.push_back(kv.first);
  return out;
}

GradientOpsMeta GetGradientForOp(const OperatorDef& def,
                                 const std::vector<GradientWrapper>& g_output,
                                 const std::vector<std::vector<int64_t>>* input_dims) {
  const GradientMakerCreator* creator = GradientRegistry::Find(def.type());
  HALFCAF_ENFORCE(creator != nullptr, "no gradient is registered for operator type '",
                  def.type(), "'");
  std::unique_ptr<GradientMakerBase> maker = (*creator)(def, g_output);
  maker->SetInputDims(input_dims);
  return maker->Get();
}

}  // namespace halfcaf
