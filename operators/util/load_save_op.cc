#include "operators/util/load_save_op.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/gradient.h"
#include "core/proto_io.h"
#include "core/tensor_proto.h"

namespace halfcaf {

namespace {

// The file path an op names: `db`, under the workspace root folder unless it is absolute
// already or `absolute_path` is set.
std::string DbPath(const OperatorBase& op) {
  HALFCAF_ENFORCE(op.HasArgument("db"), op.type(), " needs the argument `db` (the file path)");
  const std::string db = op.GetSingleArgument<std::string>("db", "");
  HALFCAF_ENFORCE(!db.empty(), op.type(), ": the argument `db` is empty");
  const std::string type = op.GetSingleArgument<std::string>("db_type", "minidb");
  std::string lower = type;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  HALFCAF_ENFORCE(lower == "minidb" || lower == "protodb" || lower == "tensorprotos", op.type(),
                  ": db_type '", type,
                  "' is not supported; use minidb, protodb or tensorprotos (all of them mean "
                  "halfcaf's TensorProtos file)");
  const bool absolute = op.GetSingleArgument<bool>("absolute_path", false);
  const std::string& root = op.workspace()->root_folder();
  if (absolute || db[0] == '/' || root.empty()) return db;
  return root + "/" + db;
}

std::string StripPrefix(const std::string& name, const std::string& prefix) {
  if (!prefix.empty() && name.compare(0, prefix.size(), prefix) == 0) {
    return name.substr(prefix.size());
  }
  return name;
}

}  // namespace

// ---- Save -------------------------------------------------------------------------------------

SaveOp::SaveOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), path_(DbPath(*this)) {
  const auto overrides = GetRepeatedArgument<std::string>("blob_name_overrides");
  const auto strip = GetSingleArgument<std::string>("strip_prefix", "");
  HALFCAF_ENFORCE(overrides.empty() || strip.empty(),
                  "blob_name_overrides and strip_prefix cannot be used together");
  HALFCAF_ENFORCE(overrides.empty() || static_cast<int>(overrides.size()) == InputSize(),
                  "blob_name_overrides has ", overrides.size(), " names but there are ",
                  InputSize(), " blobs to save");
  std::set<std::string> seen;
  for (int i = 0; i < InputSize(); ++i) {
    std::string name = overrides.empty() ? StripPrefix(input_name(i), strip) : overrides[i];
    HALFCAF_ENFORCE(!name.empty(), "blob ", i, " '", input_name(i),
                    "' would be saved under an empty name");
    HALFCAF_ENFORCE(seen.insert(name).second, "two blobs would be saved under the name '", name,
                    "'");
    stored_names_.push_back(std::move(name));
  }
}

void SaveOp::RunOnDevice() {
  TensorProtos protos;
  for (int i = 0; i < InputSize(); ++i) {
    const Blob& blob = InputBlob(i);
    HALFCAF_ENFORCE(blob.IsTensor(), "blob '", input_name(i), "' ",
                    blob.empty() ? "is empty" : "holds a non-tensor object",
                    ", so it cannot be saved");
    const Tensor& t = blob.GetTensor();
    HALFCAF_ENFORCE(t.dtype() != DataType::UNDEFINED, "blob '", input_name(i),
                    "' has no data to save");
    TensorToProto(t, stored_names_[i], protos.add_protos());
  }
  WriteTensorProtosFile(protos, path_);
}

// ---- Load -------------------------------------------------------------------------------------

LoadOp::LoadOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      path_(DbPath(*this)),
      load_all_(GetSingleArgument<bool>("load_all", false)),
      strip_prefix_(GetSingleArgument<std::string>("strip_prefix", "")) {
  const auto sources = GetRepeatedArgument<std::string>("source_blob_names");
  if (load_all_) {
    HALFCAF_ENFORCE(OutputSize() == 0 && sources.empty(),
                    "with load_all = 1 Load takes no outputs and no source_blob_names (it "
                    "creates a blob for every tensor in the file), got ",
                    OutputSize(), " outputs");
    return;
  }
  HALFCAF_ENFORCE(OutputSize() > 0, "Load needs output blobs to load, or load_all = 1");
  HALFCAF_ENFORCE(sources.empty() || static_cast<int>(sources.size()) == OutputSize(),
                  "source_blob_names has ", sources.size(), " names but Load has ", OutputSize(),
                  " outputs");
  for (int i = 0; i < OutputSize(); ++i) {
    wanted_.push_back(sources.empty() ? output_name(i) : sources[i]);
  }
}

void LoadOp::RunOnDevice() {
  TensorProtos protos;
  ReadTensorProtosFile(path_, Checksum::kIfPresent, &protos);
  std::map<std::string, int> index;  // stored name (prefix stripped) -> proto
  for (int i = 0; i < protos.protos_size(); ++i) {
    const std::string name = StripPrefix(protos.protos(i).name(), strip_prefix_);
    HALFCAF_ENFORCE(!name.empty(), path_, ": tensor #", i, " has no name");
    HALFCAF_ENFORCE(index.emplace(name, i).second, path_, ": the name '", name,
                    "' appears more than once");
  }
  std::vector<std::pair<int, Blob*>> plan;  // proto -> destination blob
  if (load_all_) {
    for (const auto& kv : index) plan.emplace_back(kv.second, ws_->CreateBlob(kv.first));
  } else {
    for (int i = 0; i < OutputSize(); ++i) {
      auto it = index.find(wanted_[i]);
      if (it == index.end()) {
        std::string stored;
        int listed = 0;
        for (const auto& kv : index) {
          if (listed++ == 10) {
            stored += ", ...";
            break;
          }
          stored += (stored.empty() ? "" : ", ") + kv.first;
        }
        HALFCAF_THROW("blob '", wanted_[i], "' is not in ", path_, " (it holds ", index.size(),
                      " tensors", index.empty() ? "" : ": ", stored, ")");
      }
      plan.emplace_back(it->second, OutputBlob(i));
    }
  }
  // Decode everything first so that a bad tensor leaves every blob as it was.
  std::vector<Tensor> loaded(plan.size());
  for (size_t k = 0; k < plan.size(); ++k) {
    try {
      TensorFromProto(protos.protos(plan[k].first), &loaded[k]);
    } catch (EnforceNotMet& e) {
      e.AddContext(path_);
      throw;
    }
  }
  for (size_t k = 0; k < plan.size(); ++k) {
    *plan[k].second->GetMutableTensor(Device()) = std::move(loaded[k]);
  }
}

REGISTER_CPU_OPERATOR(Save, SaveOp);
REGISTER_CPU_OPERATOR(Load, LoadOp);
NO_GRADIENT(Save);
NO_GRADIENT(Load);

OPERATOR_SCHEMA(Save)
    .NumInputs(1, 1 << 30)
    .NumOutputs(0)
    .SetDoc("Saves the input tensors to one TensorProtos file, replacing it atomically (a temp "
            "file beside it, fsync, rename). The file is protobuf text when the path ends in "
            ".pbtxt (or .prototxt/.txt), binary otherwise, and ends with a CRC-32 checksum record that "
            "Load verifies (binary: a field protobuf readers skip; text: a comment). Unlike Caffe2, every db_type writes "
            "this one format, so Caffe2 minidb files are not produced; db_type may be omitted.")
    .Arg("db", "string, required: output file path")
    .Arg("db_type", "string, default minidb: minidb, protodb or tensorprotos (same format)")
    .Arg("absolute_path", "bool, default 0: take `db` as is instead of relative to the "
                          "workspace root folder (paths starting with / are always taken as is)")
    .Arg("blob_name_overrides", "strings: names to store the inputs under, one per input")
    .Arg("strip_prefix", "string: removed from the start of blob names that begin with it")
    .Input(0, "blobs", "one or more tensors of any numeric type, on any device");

OPERATOR_SCHEMA(Load)
    .NumInputs(0)
    .NumOutputs(0, 1 << 30)
    .SetDoc("Loads tensors from a TensorProtos file written by Save (text or binary, detected "
            "from the content); a file whose checksum record does not match its content is refused as "
            "corrupt (files without one, e.g. from Caffe2, load unchecked). Each output is loaded from the tensor stored under its name (or "
            "under source_blob_names[i]); a name missing from the file is an error naming it and "
            "the file. With load_all = 1 and no outputs, every tensor in the file is loaded into "
            "a blob named as stored. All tensors are decoded before any blob is written. DB "
            "reader inputs are not supported.")
    .Arg("db", "string, required: input file path")
    .Arg("db_type", "string, default minidb: minidb, protodb or tensorprotos (same format)")
    .Arg("absolute_path", "bool, default 0: take `db` as is instead of relative to the "
                          "workspace root folder (paths starting with / are always taken as is)")
    .Arg("load_all", "bool, default 0: load every tensor of the file (the op has no outputs)")
    .Arg("source_blob_names", "strings: stored name for each output (default: the output names)")
    .Arg("strip_prefix", "string: removed from the start of stored names before matching")
    .Output(0, "blobs", "the loaded tensors, on the CPU, with the stored type and shape");

}  // namespace halfcaf
