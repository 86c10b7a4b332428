// halfcaf._C: the native half of the Python package. Nets, operators and plans cross as
// serialized protobuf bytes (the Python side builds them with the generated halfcaf_pb2), arrays
// through DLPack / the buffer protocol. Everything that runs ops releases the GIL.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>

#include "core/enforce.h"
#include "core/op_schema.h"
#include "core/operator.h"
#include "core/plan_executor.h"
#include "core/signal_stack.h"
#include "core/workspace.h"
#include "onnx/onnx_import.h"
#include "python/src/arrays.h"
#ifdef HALFCAF_WITH_CUDA
#include "gpu/cuda_context.h"
#endif
#include "python/src/bindings.h"
#include "python/src/workspaces.h"

namespace nb = nanobind;

namespace halfcaf {
namespace python {

Device MakeDevice(int device_type, int device_id) {
  HALFCAF_ENFORCE(device_type == 0 || device_type == 1, "device_type ", device_type,
                  " is neither CPU (0) nor CUDA (1)");
  return Device{static_cast<DeviceType>(device_type), device_id};
}

namespace {

std::vector<std::string> RegisteredOperators() {
  std::vector<std::string> types;
  for (const auto& key : OperatorRegistry::Keys()) types.push_back(key.type);
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  return types;
}

// Caffe2's GlobalInit flags: --caffe2_log_level=N (glog's levels: 0 info .. 3 fatal; negative is
// verbose) and any gflag halfcaf defines, as --name=value.
void GlobalInit(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i == 0 && a.rfind("--", 0) != 0) continue;  // the program name
    HALFCAF_ENFORCE(a.rfind("--", 0) == 0, "GlobalInit: '", a, "' is not a --flag=value");
    const size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const std::string value = eq == std::string::npos ? "true" : a.substr(eq + 1);
    if (name == "caffe2_log_level") {
      const int level = std::stoi(value);
      FLAGS_minloglevel = level < 0 ? 0 : level;
      FLAGS_v = level < 0 ? -level : 0;
      continue;
    }
    HALFCAF_ENFORCE(!gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty(),
                    "GlobalInit: unknown flag --", name);
  }
}

void BindWorkspace(nb::module_& m) {
  m.def("current_workspace", [] { return CurrentWorkspaceName(); });
  m.def("switch_workspace", &SwitchWorkspace, nb::arg("name"), nb::arg("create_if_missing") = false);
  m.def("workspaces", &WorkspaceNames);
  m.def("reset_workspace", &ResetWorkspace, nb::arg("root_folder") = "");
  m.def("root_folder", [] { return CurrentWorkspace()->root_folder(); });
  m.def("blobs", [] { return CurrentWorkspace()->Blobs(); });
  m.def("create_blob", [](const std::string& n) {
    CurrentWorkspace()->CreateBlob(n);
    return true;
  });
  m.def("num_cuda_devices", [] {
#ifdef HALFCAF_WITH_CUDA
    return NumCudaDevices();
#else
    return 0;
#endif
  });
  m.def("has_cuda_support", [] {
#ifdef HALFCAF_WITH_CUDA
    return true;
#else
    return false;
#endif
  });
  m.def("has_blob", [](const std::string& n) { return CurrentWorkspace()->HasBlob(n); });
  m.def("remove_blob", [](const std::string& n) { return CurrentWorkspace()->RemoveBlob(n); });
  m.def("feed_blob",
        [](const std::string& name, const nb::ndarray<nb::ro>& array, int device_type,
           int device_id, bool copy, const std::string& dtype) {
          auto ws = CurrentWorkspace();
          const DataType as = dtype.empty() ? DataType::UNDEFINED : DataTypeFromName(dtype);
          Tensor t;
          TensorFromArray(array, MakeDevice(device_type, device_id), copy, as, &t);
          Tensor* dst = ws->CreateTensor(name, t.device());
          dst->Reset();
          dst->SetDevice(t.device());
          dst->ShareData(t);
          return true;
        },
        nb::arg("name"), nb::arg("array"), nb::arg("device_type") = 0, nb::arg("device_id") = 0,
        nb::arg("copy") = true, nb::arg("dtype") = "");
  m.def("fetch_blob",
        [](const std::string& name, bool copy) {
          auto ws = CurrentWorkspace();
          const Blob* b = ws->GetBlob(name);
          HALFCAF_ENFORCE(b != nullptr, "blob '", name, "' does not exist in workspace '",
                          CurrentWorkspaceName(), "'");
          HALFCAF_ENFORCE(b->IsTensor(), "blob '", name, "' holds ", b->TypeName(),
                          ", not a tensor: FetchBlob returns tensors only");
          return ArrayFromTensor(b->GetTensor(), copy);
        },
        nb::arg("name"), nb::arg("copy") = true);
  m.def("blob_info", [](const std::string& name) {
    auto ws = CurrentWorkspace();
    const Blob* b = ws->GetBlob(name);
    HALFCAF_ENFORCE(b != nullptr, "blob '", name, "' does not exist");
    if (!b->IsTensor()) return nb::make_tuple(std::string(b->TypeName()), nb::none(), nb::none());
    const Tensor& t = b->GetTensor();
    return nb::make_tuple(std::string(DataTypeName(t.dtype())), t.dims(), t.device().ToString());
  });
  m.def("create_net",
        [](nb::bytes def, bool overwrite) {
          const NetDef net = ParseProto<NetDef>(def, "NetDef");
          auto ws = CurrentWorkspace();
          nb::gil_scoped_release release;
          ws->CreateNet(net, overwrite);
          return true;
        },
        nb::arg("net"), nb::arg("overwrite") = false);
  m.def("run_net",
        [](const std::string& name, int64_t num_iter) {
          auto ws = CurrentWorkspace();
          HALFCAF_ENFORCE(ws->GetNet(name) != nullptr, "net '", name,
                          "' does not exist in workspace '", CurrentWorkspaceName(),
                          "' (CreateNet it first)");
          nb::gil_scoped_release release;
          for (int64_t i = 0; i < num_iter; ++i) ws->RunNet(name);
          return true;
        },
        nb::arg("name"), nb::arg("num_iter") = 1);
  m.def("nets", [] { return CurrentWorkspace()->Nets(); });
  m.def("run_net_once", [](nb::bytes def) {
    const NetDef net = ParseProto<NetDef>(def, "NetDef");
    auto ws = CurrentWorkspace();
    nb::gil_scoped_release release;
    ws->RunNetOnce(net);
    return true;
  });
  m.def("run_operator_once", [](nb::bytes def) {
    NetDef net;
    *net.add_op() = ParseProto<OperatorDef>(def, "OperatorDef");
    auto ws = CurrentWorkspace();
    nb::gil_scoped_release release;
    ws->RunNetOnce(net);
    return true;
  });
  m.def("run_plan", [](nb::bytes def) {
    const PlanDef plan = ParseProto<PlanDef>(def, "PlanDef");
    auto ws = CurrentWorkspace();
    nb::gil_scoped_release release;
    RunPlan(plan, ws.get());
    return true;
  });
  m.def("registered_operators", &RegisteredOperators);
  m.def("operator_doc", [](const std::string& type) {
    const OpSchema* s = OpSchemaRegistry::Schema(type);
    HALFCAF_ENFORCE(s != nullptr, "no operator schema for '", type, "'");
    return s->doc();
  });
  m.def("global_init", &GlobalInit);
  m.def("clear_workspaces", &ClearWorkspaces);
}

}  // namespace
}  // namespace python
}  // namespace halfcaf

NB_MODULE(_C, m) {
  using namespace halfcaf::python;
  m.doc() = "halfcaf's native core (use the halfcaf package's modules, not this one)";
  // Python installs its signal handlers with SA_ONSTACK (3.10+): on the importing thread (the
  // main one, which a Ctrl-C reaches) they run on this stack, not inside the heap workspace that
  // oneDNN 2.6's SGEMM kernels point rsp at (core/signal_stack.h).
  halfcaf::UseAlternateSignalStack();
  static nb::exception<halfcaf::EnforceNotMet> enforce(m, "EnforceNotMet", PyExc_RuntimeError);
  nb::exception<halfcaf::OnnxUnsupported>(m, "OnnxUnsupported", enforce.ptr());
  BindWorkspace(m);
  BindModels(m);
  BindOnnx(m);
}
