#include "models/data_parallel.h"

#include "core/enforce.h"
#include "core/operator.h"

namespace halfcaf {

namespace {

DeviceOption OptionFor(Device device, const DeviceOption& base) {
  DeviceOption opt = base;
  opt.set_device_type(static_cast<int>(device.type));
  opt.set_device_id(device.id);
  return opt;
}

OperatorDef OnDevice(OperatorDef op, Device device) {
  *op.mutable_device_option() = OptionFor(device, op.device_option());
  return op;
}

}  // namespace

std::vector<Replica> MakeReplicas(const std::vector<Device>& devices) {
  HALFCAF_ENFORCE(!devices.empty(), "data parallelism needs at least one device");
  std::vector<Replica> out;
  for (size_t i = 0; i < devices.size(); ++i) {
    HALFCAF_ENFORCE(devices[i].type == devices[0].type, "all replicas must be on one device "
                    "type, got ", devices[0].ToString(), " and ", devices[i].ToString());
    HALFCAF_ENFORCE(devices[i].type == DeviceType::CPU || devices[i].type == DeviceType::CUDA,
                    "replicas run on CPU or CUDA devices, got ", devices[i].ToString());
    const char* kind = devices[i].type == DeviceType::CUDA ? "gpu_" : "cpu_";
    out.push_back(Replica{devices[i], kind + std::to_string(i)});
  }
  return out;
}

NetDef ReplicateNet(const NetDef& net, const Replica& replica, const CpuPredicate& stays_on_cpu,
                    const std::set<std::string>& shared) {
  auto rename = [&](std::string* blob) {
    if (!shared.count(*blob)) *blob = replica.Blob(*blob);
  };
  NetDef out = net;
  out.set_name(replica.prefix + "/" + net.name());
  for (auto& b : *out.mutable_external_input()) rename(&b);
  for (auto& b : *out.mutable_external_output()) rename(&b);
  for (auto& op : *out.mutable_op()) {
    for (auto& b : *op.mutable_input()) rename(&b);
    for (auto& b : *op.mutable_output()) rename(&b);
    if (!op.name().empty()) op.set_name(replica.prefix + "/" + op.name());
    const Device device = stays_on_cpu && stays_on_cpu(op) ? Device{} : replica.device;
    op = OnDevice(op, device);
  }
  return out;
}

std::string AllReduceScratch(const Replica& receiver, const std::string& blob) {
  return receiver.Blob(blob) + "_allreduce_in";
}

void AddReduce(const std::vector<std::string>& blobs, const std::vector<Replica>& replicas,
               NetDef* net) {
  const size_t n = replicas.size();
  // After the round with stride s, replica i (i % 2s == 0) holds the sum of replicas i .. i+2s-1.
  for (size_t s = 1; s < n; s *= 2) {
    for (const auto& b : blobs) {
      for (size_t i = 0; i + s < n; i += 2 * s) {
        const Replica& dst = replicas[i];
        const Replica& src = replicas[i + s];
        const std::string scratch = AllReduceScratch(dst, b);
        *net->add_op() = OnDevice(MakeOperatorDef("Copy", "", {src.Blob(b)}, {scratch}),
                                  dst.device);
        *net->add_op() = OnDevice(MakeOperatorDef("Sum", "", {dst.Blob(b), scratch},
                                                  {dst.Blob(b)}),
                                  dst.device);
      }
    }
  }
}

void AddBroadcastBack(const std::vector<std::string>& blobs, const std::vector<Replica>& replicas,
                      NetDef* net) {
  const size_t n = replicas.size();
  if (n < 2) return;
  size_t top = 1;  // largest power of two below n: the first stride
  while (top * 2 < n) top *= 2;
  for (size_t s = top; s >= 1; s /= 2) {
    for (const auto& b : blobs) {
      for (size_t i = 0; i + s < n; i += 2 * s) {
        const Replica& src = replicas[i];
        const Replica& dst = replicas[i + s];
        *net->add_op() = OnDevice(MakeOperatorDef("Copy", "", {src.Blob(b)}, {dst.Blob(b)}),
                                  dst.device);
      }
    }
  }
}

void AddAllReduce(const std::vector<std::string>& blobs, const std::vector<Replica>& replicas,
                  NetDef* net) {
  AddReduce(blobs, replicas, net);
  AddBroadcastBack(blobs, replicas, net);
}

}  // namespace halfcaf
