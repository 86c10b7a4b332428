#include "core/op_schema.h"

#include <algorithm>
#include <memory>
#include <sstream>

#include "core/argument.h"
#include "core/checked_math.h"
#include "core/enforce.h"

namespace halfcaf {

int64_t TensorShape::numel() const { return CheckedNumel(dims, "shape"); }

OpSchema::OpSchema(std::string type, std::string file, int line)
    : type_(std::move(type)), file_(std::move(file)), line_(line) {}

OpSchema& OpSchema::NumInputs(int min, int max) {
  min_in_ = min;
  max_in_ = max;
  in_ok_ = [min, max](int n) { return n >= min && n <= max; };
  return *this;
}

OpSchema& OpSchema::NumInputs(std::set<int> allowed) {
  min_in_ = *allowed.begin();
  max_in_ = *allowed.rbegin();
  in_ok_ = [allowed](int n) { return allowed.count(n) > 0; };
  return *this;
}

OpSchema& OpSchema::NumOutputs(int min, int max) {
  min_out_ = min;
  max_out_ = max;
  out_ok_ = [min, max](int n) { return n >= min && n <= max; };
  return *this;
}

OpSchema& OpSchema::NumOutputs(std::set<int> allowed) {
  min_out_ = *allowed.begin();
  max_out_ = *allowed.rbegin();
  out_ok_ = [allowed](int n) { return allowed.count(n) > 0; };
  return *this;
}

OpSchema& OpSchema::NumInputsOutputs(std::function<bool(int, int)> fn) {
  in_out_ok_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::AllowInplace(std::set<std::pair<int, int>> pairs) {
  allow_inplace_ = [pairs](int i, int o) { return pairs.count({i, o}) > 0; };
  return *this;
}

OpSchema& OpSchema::AllowInplace(std::function<bool(int, int)> fn) {
  allow_inplace_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::AllowOneToOneInplace() {
  return AllowInplace([](int i, int o) { return i == o; });
}

OpSchema& OpSchema::EnforceInplace(std::set<std::pair<int, int>> pairs) {
  enforce_inplace_ = [pairs](int i, int o) { return pairs.count({i, o}) > 0; };
  return *this;
}

OpSchema& OpSchema::EnforceOneToOneInplace() {
  enforce_inplace_ = [](int i, int o) { return i == o; };
  return *this;
}

OpSchema& OpSchema::TensorInferenceFunction(ShapeFn fn) {
  shape_fn_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::IdenticalTypeAndShape() {
  return TensorInferenceFunction(
      [](const OperatorDef&, const std::vector<TensorShape>& in) {
        return std::vector<TensorShape>{in.at(0)};
      });
}

OpSchema& OpSchema::IdenticalTypeAndShapeOfInput(int i) {
  return TensorInferenceFunction(
      [i](const OperatorDef&, const std::vector<TensorShape>& in) {
        return std::vector<TensorShape>{in.at(i)};
      });
}

OpSchema& OpSchema::CostInferenceFunction(CostFn fn) {
  cost_fn_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::PointwiseCost(double flops_per_element) {
  return CostInferenceFunction(
      [flops_per_element](const OperatorDef&, const std::vector<TensorShape>& in) {
        OpCost c;
        double n = static_cast<double>(in.at(0).numel());
        c.flops = flops_per_element * n;
        c.bytes_read = n * DataTypeSize(in[0].dtype);
        c.bytes_written = c.bytes_read;
        return c;
      });
}

OpSchema& OpSchema::SetDoc(std::string doc) {
  doc_ = std::move(doc);
  return *this;
}

OpSchema& OpSchema::Arg(std::string name, std::string description) {
  args_.emplace_back(std::move(name), std::move(description));
  return *this;
}

bool OpSchema::HasArg(const std::string& name) const {
  return std::any_of(args_.begin(), args_.end(), [&](const auto& a) { return a.first == name; });
}

bool InTrainingMode(const OperatorDef& op) {
  const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
  return schema != nullptr && schema->HasArg("is_test") &&
         ArgumentHelper(op).GetSingleArgument<int64_t>("is_test", 0) == 0;
}

OpSchema& OpSchema::Input(int i, std::string name, std::string description) {
  inputs_[i] = {std::move(name), std::move(description)};
  return *this;
}

OpSchema& OpSchema::Output(int i, std::string name, std::string description) {
  outputs_[i] = {std::move(name), std::move(description)};
  return *this;
}

std::string OpSchema::CountsString() const {
  auto range = [](int lo, int hi) {
    return lo == hi ? std::to_string(lo)
                    : std::to_string(lo) + " to " +
                          (hi >= (1 << 30) ? std::string("any") : std::to_string(hi));
  };
  return MakeString(range(min_in_, max_in_), " input(s), ", range(min_out_, max_out_),
                    " output(s)");
}

void OpSchema::Verify(const OperatorDef& def) const {
  const int ni = def.input_size(), no = def.output_size();
  HALFCAF_ENFORCE(!in_ok_ || in_ok_(ni), type_, " takes ", CountsString(), ", got ", ni,
                  " input(s)");
  HALFCAF_ENFORCE(!out_ok_ || out_ok_(no), type_, " takes ", CountsString(), ", got ", no,
                  " output(s)");
  HALFCAF_ENFORCE(!in_out_ok_ || in_out_ok_(ni, no), type_, " does not accept ", ni,
                  " input(s) with ", no, " output(s)");
  for (int i = 0; i < ni; ++i) {
    for (int o = 0; o < no; ++o) {
      bool same = def.input(i) == def.output(o);
      if (same) {
        HALFCAF_ENFORCE(allow_inplace_(i, o) || enforce_inplace_(i, o), type_, ": input ", i,
                        " and output ", o, " are both '", def.input(i),
                        "', but this operator cannot run in place on that pair");
      } else if (enforce_inplace_(i, o)) {
        HALFCAF_THROW(type_, ": input ", i, " ('", def.input(i), "') and output ", o, " ('",
                      def.output(o), "') must be the same blob");
      }
    }
  }
}

std::vector<TensorShape> OpSchema::InferShapes(const OperatorDef& def,
                                               const std::vector<TensorShape>& inputs) const {
  if (!shape_fn_) {
    return std::vector<TensorShape>(def.output_size(), TensorShape{{}, DataType::FLOAT, true});
  }
  for (const auto& s : inputs) {
    if (s.unknown) {
      return std::vector<TensorShape>(def.output_size(), TensorShape{{}, DataType::FLOAT, true});
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) CheckedNumel(inputs[i].dims, type_, " input ", i);
  auto out = shape_fn_(def, inputs);
  out.resize(def.output_size(), TensorShape{{}, DataType::FLOAT, true});
  for (int i = 0; i < def.output_size(); ++i) {
    if (!out[i].unknown) CheckedNumel(out[i].dims, type_, " output ", i, " '", def.output(i), "'");
  }
  return out;
}

OpCost OpSchema::InferCost(const OperatorDef& def, const std::vector<TensorShape>& inputs) const {
  return cost_fn_ ? cost_fn_(def, inputs) : OpCost{};
}

std::string OpSchema::FormattedDoc() const {
  std::ostringstream ss;
  ss << type_ << " (" << CountsString() << ")\n";
  if (!doc_.empty()) ss << "  " << doc_ << "\n";
  for (const auto& kv : inputs_) {
    ss << "  input " << kv.first << " " << kv.second.first << ": " << kv.second.second << "\n";
  }
  for (const auto& kv : outputs_) {
    ss << "  output " << kv.first << " " << kv.second.first << ": " << kv.second.second << "\n";
  }
  for (const auto& a : args_) ss << "  arg " << a.first << ": " << a.second << "\n";
  return ss.str();
}

namespace {
std::map<std::string, std::unique_ptr<OpSchema>>& SchemaMap() {
  static std::map<std::string, std::unique_ptr<OpSchema>> m;
  return m;
}
}  // namespace

OpSchema& OpSchemaRegistry::NewSchema(const std::string& type, const char* file, int line) {
  auto& m = SchemaMap();
  auto it = m.find(type);
  if (it != m.end()) {
    // A duplicate schema is a programming error caught at load time.
    fprintf(stderr, "halfcaf: schema for %s defined twice (%s:%d and %s:%d)\n", type.c_str(),
            it->second->file().c_str(), it->second->line(), file, line);
    abort();
  }
  auto schema = std::make_unique<OpSchema>(type, file, line);
  OpSchema& ref = *schema;
  m[type] = std::move(schema);
  return ref;
}

const OpSchema* OpSchemaRegistry::Schema(const std::string& type) {
  auto& m = SchemaMap();
  auto it = m.find(type);
  return it == m.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpSchemaRegistry::Types() {
  std::vector<std::string> out;
  for (const auto& kv : SchemaMap()) out.push_back(kv.first);
  return out;
}

}  // namespace halfcaf
