// halfcaf._C: the C++ model-building passes Python reaches: gradients (the C++ gradient
// registry, as Caffe2's core.AddGradientOperators), the mixed-precision transform, data-parallel
// replication and all-reduce, and the inference optimizer.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/set.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "core/gradient.h"
#include "core/op_schema.h"
#include "models/backward.h"
#include "models/data_parallel.h"
#include "models/inference_optimize.h"
#include "models/mixed_precision.h"
#include "python/src/bindings.h"
#include "python/src/workspaces.h"

namespace nb = nanobind;

namespace halfcaf {
namespace python {

namespace {

std::vector<Replica> Replicas(const std::vector<std::pair<int, int>>& devices) {
  std::vector<Device> ds;
  for (const auto& d : devices) ds.push_back(MakeDevice(d.first, d.second));
  return MakeReplicas(ds);
}

// The shapes and types of the blobs `net` writes, op after op, from `known` ({blob: (dims,
// dtype)}) through the operators' shape inference; ops without inference or with an unknown
// input leave their outputs out.
std::map<std::string, std::pair<std::vector<int64_t>, std::string>> InferShapes(
    const NetDef& net,
    const std::map<std::string, std::pair<std::vector<int64_t>, std::string>>& known) {
  std::map<std::string, TensorShape> shapes;
  for (const auto& kv : known) {
    TensorShape t;
    t.dims = kv.second.first;
    t.dtype = DataTypeFromName(kv.second.second);
    shapes[kv.first] = t;
  }
  for (const OperatorDef& op : net.op()) {
    const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
    std::vector<TensorShape> in;
    bool all = schema != nullptr && schema->HasShapeInference();
    for (int i = 0; all && i < op.input_size(); ++i) {
      auto it = shapes.find(op.input(i));
      if (it == shapes.end()) all = false;
      else in.push_back(it->second);
    }
    if (!all) {
      for (const auto& o : op.output()) shapes.erase(o);  // unknown from here on
      continue;
    }
    std::vector<TensorShape> out;
    try {
      out = schema->InferShapes(op, in);
    } catch (const EnforceNotMet&) {
      out.clear();
    }
    for (int i = 0; i < op.output_size(); ++i) {
      if (i < static_cast<int>(out.size()) && !out[i].unknown) shapes[op.output(i)] = out[i];
      else shapes.erase(op.output(i));
    }
  }
  std::map<std::string, std::pair<std::vector<int64_t>, std::string>> result;
  for (const auto& kv : shapes) result[kv.first] = {kv.second.dims, DataTypeName(kv.second.dtype)};
  return result;
}

}  // namespace

void BindModels(nb::module_& m) {
  m.def("infer_shapes",
        [](nb::bytes net_bytes,
           const std::map<std::string, std::pair<std::vector<int64_t>, std::string>>& known) {
          return InferShapes(ParseProto<NetDef>(net_bytes, "NetDef"), known);
        },
        nb::arg("net"), nb::arg("known"));
  // -> (net with the gradient ops appended, {blob: gradient name | (indices, values)}).
  m.def("add_gradient_operators",
        [](nb::bytes net_bytes, const std::vector<std::string>& losses,
           const std::map<std::string, std::string>& seeds, const BlobDims& dims) {
          NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
          const auto grads = AddGradientOperators(&net, losses, seeds, dims.empty() ? nullptr : &dims);
          nb::dict map;
          for (const auto& kv : grads) {
            if (kv.second.IsDense()) {
              map[nb::str(kv.first.c_str())] = nb::str(kv.second.dense.c_str());
            } else if (kv.second.IsSparse()) {
              map[nb::str(kv.first.c_str())] =
                  nb::make_tuple(kv.second.indices, kv.second.values);
            }
          }
          return nb::make_tuple(ToBytes(net), map);
        },
        nb::arg("net"), nb::arg("losses"), nb::arg("seeds") = std::map<std::string, std::string>{},
        nb::arg("blob_dims") = BlobDims{});
  m.def("gradient_operator_types", [] { return GradientRegistry::Types(); });
  // -> (rewritten forward net, masters that got a low-precision copy).
  m.def("to_mixed_precision",
        [](nb::bytes net_bytes, const std::set<std::string>& low_inputs,
           const std::set<std::string>& params, const std::string& low_type) {
          const NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
          const DataType t = DataTypeFromName(low_type);
          HALFCAF_ENFORCE(t == DataType::FLOAT16 || t == DataType::BFLOAT16,
                          "the low precision is float16 or bfloat16, not ", low_type);
          const MixedPrecisionResult r = ToMixedPrecision(net, low_inputs, params, t);
          return nb::make_tuple(ToBytes(r.net), r.fp16_params);
        },
        nb::arg("net"), nb::arg("low_precision_inputs"), nb::arg("params"),
        nb::arg("low_type") = "float16");
  m.def("low_precision_copy_name", [](const std::string& param, const std::string& type) {
    return LowPrecisionCopyName(param, DataTypeFromName(type));
  });
  m.def("runs_in_float32", &RunsInFloat32);
  // Data parallel: devices as (device_type, device_id) pairs, one replica each.
  m.def("replica_prefixes", [](const std::vector<std::pair<int, int>>& devices) {
    std::vector<std::string> out;
    for (const Replica& r : Replicas(devices)) out.push_back(r.prefix);
    return out;
  });
  m.def("replicate_net",
        [](nb::bytes net_bytes, const std::vector<std::pair<int, int>>& devices, int index,
           const std::set<std::string>& shared, const std::set<std::string>& cpu_ops) {
          const NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
          const auto replicas = Replicas(devices);
          HALFCAF_ENFORCE(index >= 0 && index < static_cast<int>(replicas.size()),
                          "replica ", index, " of ", replicas.size());
          const NetDef out = ReplicateNet(
              net, replicas[index],
              [&](const OperatorDef& op) { return cpu_ops.count(op.type()) > 0; }, shared);
          return ToBytes(out);
        },
        nb::arg("net"), nb::arg("devices"), nb::arg("index"),
        nb::arg("shared") = std::set<std::string>{}, nb::arg("cpu_ops") = std::set<std::string>{});
  m.def("add_all_reduce",
        [](nb::bytes net_bytes, const std::vector<std::string>& blobs,
           const std::vector<std::pair<int, int>>& devices) {
          NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
          AddAllReduce(blobs, Replicas(devices), &net);
          return ToBytes(net);
        });
  // The inference optimizer over the current workspace's parameters -> (net, report summary).
  m.def("optimize_for_inference",
        [](nb::bytes net_bytes, const std::set<std::string>& keep, bool fold_batch_norm,
           bool fuse, bool channels_last, bool drop_unused_params) {
          NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
          InferenceOptions o;
          o.keep = keep;
          o.fold_batch_norm = fold_batch_norm;
          o.fuse = fuse;
          o.channels_last = channels_last;
          o.drop_unused_params = drop_unused_params;
          auto ws = CurrentWorkspace();
          const InferenceReport r = OptimizeForInference(&net, ws.get(), o);
          return nb::make_tuple(ToBytes(net), r.Summary());
        },
        nb::arg("net"), nb::arg("keep") = std::set<std::string>{},
        nb::arg("fold_batch_norm") = true, nb::arg("fuse") = true,
        nb::arg("channels_last") = true, nb::arg("drop_unused_params") = true);
}

}  // namespace python
}  // namespace halfcaf
