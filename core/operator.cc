#include "core/operator.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <tuple>

#include "core/strings.h"

namespace halfcaf {

OperatorBase::OperatorBase(const OperatorDef& def, Workspace* ws)
    : def_(def), args_(def_), ws_(ws) {
  for (int i = 0; i < def_.input_size(); ++i) {
    const Blob* b = ws->GetBlob(def_.input(i));
    HALFCAF_ENFORCE(b != nullptr, "input ", i, " '", def_.input(i),
                    "' does not exist in the workspace (no earlier op produces it, and it was not "
                    "fed or created by the init net)");
    inputs_.push_back(b);
  }
  for (int i = 0; i < def_.output_size(); ++i) outputs_.push_back(ws->CreateBlob(def_.output(i)));
}

std::string OperatorBase::DebugName() const {
  return def_.name().empty() ? Abbreviate(def_.type())
                             : MakeString(Abbreviate(def_.type()), " '", Abbreviate(def_.name()),
                                          "'");
}

const Tensor& OperatorBase::TensorInput(int i, Device device) const {
  const Blob* b = inputs_.at(i);
  HALFCAF_ENFORCE(b->IsTensor(), "input ", i, " '", def_.input(i), "' ",
                  b->empty() ? "is empty (nothing has written it yet)"
                             : "holds a non-tensor object");
  const Tensor& t = b->GetTensor();
  HALFCAF_ENFORCE(t.dtype() != DataType::UNDEFINED, "input ", i, " '", def_.input(i),
                  "' has no data yet (nothing has written it)");
  HALFCAF_ENFORCE(t.device() == device, "input ", i, " '", def_.input(i), "' is on ",
                  t.device().ToString(), " but the op runs on ", device.ToString(),
                  " (insert a copy op)");
  return t;
}

const Tensor& OperatorBase::CPUInput(int i) const { return TensorInput(i, Device()); }

// ---- registry ------------------------------------------------------------------------------

namespace {

using RegistryMap = std::map<std::tuple<int, std::string, std::string>, OperatorCreator>;

RegistryMap& Registry() {
  static RegistryMap m;
  return m;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      bool eq = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (eq ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::map<std::string, std::string>& MissingHints() {
  static std::map<std::string, std::string> m;
  return m;
}

}  // namespace

void OperatorRegistry::Register(DeviceType device, const std::string& type,
                                const std::string& engine, OperatorCreator creator) {
  auto key = std::make_tuple(static_cast<int>(device), type, engine);
  if (Registry().count(key)) {
    fprintf(stderr, "halfcaf: operator %s (%s, engine '%s') registered twice\n", type.c_str(),
            DeviceTypeName(device), engine.c_str());
    abort();
  }
  Registry()[key] = std::move(creator);
}

const OperatorCreator* OperatorRegistry::Find(DeviceType device, const std::string& type,
                                              const std::string& engine) {
  auto it = Registry().find(std::make_tuple(static_cast<int>(device), type, engine));
  return it == Registry().end() ? nullptr : &it->second;
}

bool OperatorRegistry::HasType(DeviceType device, const std::string& type) {
  for (const auto& kv : Registry()) {
    if (std::get<0>(kv.first) == static_cast<int>(device) && std::get<1>(kv.first) == type) {
      return true;
    }
  }
  return false;
}

std::vector<OperatorKey> OperatorRegistry::Keys() {
  std::vector<OperatorKey> keys;
  for (const auto& kv : Registry()) {
    keys.push_back({static_cast<DeviceType>(std::get<0>(kv.first)), std::get<1>(kv.first),
                    std::get<2>(kv.first)});
  }
  return keys;
}

std::vector<std::string> OperatorRegistry::CloseMatches(const std::string& type,
                                                        size_t max_results) {
  // No operator name is this long: a longer type is no typo, and the edit distance (quadratic)
  // against every name would take seconds for a megabyte-long one.
  constexpr size_t kMaxTypeLength = 64;
  std::vector<std::pair<size_t, std::string>> scored;
  if (type.size() > kMaxTypeLength) return {};
  const size_t max_distance = std::max<size_t>(2, type.size() / 3);
  std::string last;
  for (const auto& kv : Registry()) {
    const std::string& name = std::get<1>(kv.first);
    if (name == last) continue;
    last = name;
    // The distance is at least the difference in length.
    const size_t gap = name.size() > type.size() ? name.size() - type.size()
                                                 : type.size() - name.size();
    if (gap > max_distance) continue;
    size_t d = EditDistance(type, name);
    if (d <= max_distance) scored.emplace_back(d, name);
  }
  std::sort(scored.begin(), scored.end());
  scored.erase(std::unique(scored.begin(), scored.end()), scored.end());
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() >= max_results) break;
    if (std::find(out.begin(), out.end(), s.second) == out.end()) out.push_back(s.second);
  }
  return out;
}

void OperatorRegistry::RegisterMissingHint(const std::string& type, const std::string& hint) {
  MissingHints()[type] = hint;
}

const std::string* OperatorRegistry::MissingHint(const std::string& type) {
  auto it = MissingHints().find(type);
  return it == MissingHints().end() ? nullptr : &it->second;
}

std::unique_ptr<OperatorBase> CreateOperator(const OperatorDef& def, Workspace* ws) {
  HALFCAF_ENFORCE(!def.type().empty(), "operator has no type");
  const DeviceType device = static_cast<DeviceType>(def.device_option().device_type());
  HALFCAF_ENFORCE(device == DeviceType::CPU || device == DeviceType::CUDA,
                  "unknown device_type ", def.device_option().device_type(),
                  " (0 = CPU, 1 = CUDA)");
  if (!OperatorRegistry::HasType(device, def.type())) {
    bool elsewhere = OperatorRegistry::HasType(DeviceType::CPU, def.type()) ||
                     OperatorRegistry::HasType(DeviceType::CUDA, def.type());
    if (elsewhere) {
      HALFCAF_THROW("operator type '", Abbreviate(def.type()), "' has no ", DeviceTypeName(device),
                    " implementation",
                    device == DeviceType::CUDA ? " in this build (is the CUDA backend built?)"
                                               : "");
    }
    if (const std::string* hint = OperatorRegistry::MissingHint(def.type())) {
      HALFCAF_THROW("operator type '", def.type(), "' is not in this build: ", *hint);
    }
    auto close = OperatorRegistry::CloseMatches(def.type());
    std::string hint;
    for (size_t i = 0; i < close.size(); ++i) hint += (i ? ", " : "") + close[i];
    HALFCAF_THROW("unknown operator type '", Abbreviate(def.type()), "'",
                  hint.empty() ? std::string() : "; did you mean: " + hint + "?");
  }
  if (const OpSchema* schema = OpSchemaRegistry::Schema(def.type())) schema->Verify(def);

  std::vector<std::string> engines;
  for (const auto& e : SplitList(def.engine())) {
    if (e != "DEFAULT") engines.push_back(e);
  }
  // Global preferences after the listed engines: CUDNN on GPU, DNNL (oneDNN) on CPU. An engine
  // that is not built (not registered) is skipped.
  if (device == DeviceType::CUDA) engines.push_back("CUDNN");
  if (device == DeviceType::CPU) engines.push_back("DNNL");
  for (const auto& engine : engines) {
    const OperatorCreator* creator = OperatorRegistry::Find(device, def.type(), engine);
    if (!creator) continue;
    try {
      return (*creator)(def, ws);
    } catch (const UnsupportedOperatorFeature&) {
      // This engine declined; try the next one.
    }
  }
  const OperatorCreator* creator = OperatorRegistry::Find(device, def.type(), "");
  HALFCAF_ENFORCE(creator != nullptr, "operator type '", def.type(), "' has no default ",
                  DeviceTypeName(device), " implementation and no listed engine accepted it");
  return (*creator)(def, ws);
}

}  // namespace halfcaf
