// halfcaf._C: ONNX import and export for halfcaf.onnx (the backend and the converters).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace halfcaf {
namespace python {

namespace {

nb::list ValueInfos(const std::vector<OnnxValueInfo>& infos) {
  nb::list out;
  for (const auto& v : infos) out.append(nb::make_tuple(v.name, DataTypeName(v.dtype), v.dims));
  return out;
}

}  // namespace

void BindOnnx(nb::module_& m) {
  m.def("onnx_available", &OnnxAvailable);
  // -> {"init", "predict": NetDef bytes, "inputs", "outputs": [(name, dtype, dims)], "opset",
  //     "ir_version", "producer"}. OnnxUnsupported names a node halfcaf cannot take.
  m.def("onnx_import",
        [](nb::bytes model, const std::string& source,
           const std::map<std::string, std::vector<int64_t>>& input_dims, int64_t batch_size,
           const std::map<std::string, nb::ndarray<nb::ro>>& constant_inputs) {
          OnnxImportOptions o;
          o.input_dims = input_dims;
          o.batch_size = batch_size;
          for (const auto& kv : constant_inputs) {
            TensorFromArray(kv.second, Device{}, true, DataType::UNDEFINED,
                            &o.constant_inputs[kv.first]);
          }
          const std::string bytes(model.c_str(), model.size());
          ImportedNet net;
          {
            nb::gil_scoped_release release;
            net = ImportOnnxBytes(bytes, source, o);
          }
          nb::dict d;
          d["init"] = ToBytes(net.init);
          d["predict"] = ToBytes(net.predict);
          d["inputs"] = ValueInfos(net.inputs);
          d["outputs"] = ValueInfos(net.outputs);
          d["opset"] = net.opset;
          d["ir_version"] = net.ir_version;
          d["producer"] = net.producer;
          return d;
        },
        nb::arg("model"), nb::arg("source") = "model",
        nb::arg("input_dims") = std::map<std::string, std::vector<int64_t>>{},
        nb::arg("batch_size") = 0,
        nb::arg("constant_inputs") = std::map<std::string, nb::ndarray<nb::ro>>{});
  // -> the serialized ModelProto of an inference net (init runs in a workspace of its own).
  m.def("onnx_export",
        [](nb::bytes init, nb::bytes predict,
           const std::map<std::string, std::vector<int64_t>>& input_dims,
           const std::vector<std::string>& outputs, bool strip_training) {
          OnnxExportOptions o;
          o.input_dims = input_dims;
          o.outputs = outputs;
          o.strip_training = strip_training;
          const NetDef i = ParseProto<NetDef>(init, "NetDef");
          const NetDef p = ParseProto<NetDef>(predict, "NetDef");
          std::string bytes;
          {
            nb::gil_scoped_release release;
            bytes = ExportOnnx(i, p, o);
          }
          return nb::bytes(bytes.data(), bytes.size());
        },
        nb::arg("init"), nb::arg("predict"),
        nb::arg("input_dims") = std::map<std::string, std::vector<int64_t>>{},
        nb::arg("outputs") = std::vector<std::string>{}, nb::arg("strip_training") = true);
}

}  // namespace python
}  // namespace halfcaf
