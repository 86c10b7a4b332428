// Data parallelism without NCCL (DESIGN.md): one replica of a single-device training net per
// device, every blob of replica i renamed `<prefix_i>/<blob>` (Caffe2's `gpu_0/conv1_w`,
// `cpu_1/...`), gradients summed across replicas by plain operators — Copy (a peer copy between
// GPUs, a memcpy between CPU replicas) and Sum — in a binary tree, then copied back, so each
// replica updates its own FP32 master copy from the same summed gradient. In mixed precision the
// exchanged gradients are the FP16 ones. The exchange is generic over the Copy operator of the
// replicas' device type, so the same code runs with several CPU "devices", several replicas on
// one GPU and one replica per GPU.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/types.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct Replica {
  Device device;
  std::string prefix;  // "gpu_<i>" or "cpu_<i>", i = replica index

  // `<prefix>/<blob>`.
  std::string Blob(const std::string& blob) const { return prefix + "/" + blob; }
};

// One replica per entry of `devices` (a device may repeat: several replicas on one GPU). All
// devices must be of one type. Throws on an empty list or mixed types.
std::vector<Replica> MakeReplicas(const std::vector<Device>& devices);

// Puts a single-device op on `device`, or keeps it on the CPU when `stays_on_cpu(op)` says so.
using CpuPredicate = std::function<bool(const OperatorDef&)>;

// A copy of `net` for `replica`: every input, output and external blob renamed with the prefix
// and every op placed on the replica's device (except those `stays_on_cpu` keeps on the CPU).
// Blobs in `shared` keep their names (e.g. a reader's outputs that every replica reads).
NetDef ReplicateNet(const NetDef& net, const Replica& replica, const CpuPredicate& stays_on_cpu,
                    const std::set<std::string>& shared = {});

// Appends to `net` the ops that replace every replica's `<prefix>/<blob>` by the sum over all
// replicas, for each blob in `blobs` (gradients, any float type, same dims on every replica):
// a binary-tree reduction into replica 0 (Copy of the partner's blob onto the receiving
// replica's device, then an in-place Sum), then the same tree backwards to copy the total out.
// Each op runs on the device of the replica it writes. log2(N) rounds each way; the ops of one
// round are independent of each other (a dag net runs them concurrently).
void AddAllReduce(const std::vector<std::string>& blobs, const std::vector<Replica>& replicas,
                  NetDef* net);

// The two halves of AddAllReduce: the reduction into replica 0, and the copies of replica 0's
// blobs back to the others (the multi-process trainer sums across processes in between).
void AddReduce(const std::vector<std::string>& blobs, const std::vector<Replica>& replicas,
               NetDef* net);
void AddBroadcastBack(const std::vector<std::string>& blobs, const std::vector<Replica>& replicas,
                      NetDef* net);

// Name of the temporary that holds the partner's copy of `blob` on the receiving replica.
std::string AllReduceScratch(const Replica& receiver, const std::string& blob);

}  // namespace halfcaf
