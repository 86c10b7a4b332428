#include "models/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/enforce.h"

namespace halfcaf {

namespace {

// Ops whose outputs are not tensors (a DB reader, a mutex, a Gloo world): never shared.
const std::set<std::string> kNonTensorMakers = {"CreateDB", "CreateMutex", "CreateCommonWorld",
                                                "CloneCommonWorld"};

struct BlobUse {
  int first = -1, last = -1;  // first and last op touching it
  bool first_writes = false;  // the first access writes it without reading it
  bool excluded = false;
  std::string device;         // of the op that first writes it
  std::vector<int> ops;       // every op touching it (in order, no repeats)
};

std::string DeviceKey(const DeviceOption& net, const OperatorDef& op) {
  const DeviceOption& d = op.has_device_option() ? op.device_option() : net;
  return std::to_string(d.device_type()) + ":" + std::to_string(d.device_id());
}

// Ancestors of every op in the dag executor's graph (read-after-write, write-after-read and
// write-after-write edges, as core/net_dag.cc builds them), as bitsets.
class Ancestry {
 public:
  explicit Ancestry(const NetDef& net) : n_(net.op_size()), words_((n_ + 63) / 64) {
    bits_.assign(static_cast<size_t>(n_) * words_, 0);
    std::map<std::string, int> last_writer;
    std::map<std::string, std::vector<int>> readers_since_write;
    for (int j = 0; j < n_; ++j) {
      const OperatorDef& op = net.op(j);
      auto inherit = [&](int from) {
        if (from == j) return;
        uint64_t* dst = Row(j);
        const uint64_t* src = Row(from);
        for (int w = 0; w < words_; ++w) dst[w] |= src[w];
        dst[from / 64] |= uint64_t{1} << (from % 64);
      };
      for (const auto& in : op.input()) {
        auto w = last_writer.find(in);
        if (w != last_writer.end()) inherit(w->second);
      }
      for (const auto& out : op.output()) {
        auto w = last_writer.find(out);
        if (w != last_writer.end()) inherit(w->second);
        for (int r : readers_since_write[out]) inherit(r);
      }
      for (const auto& in : op.input()) readers_since_write[in].push_back(j);
      for (const auto& out : op.output()) {
        last_writer[out] = j;
        readers_since_write[out].clear();
      }
    }
  }
  // Whether op `a` finishes before op `b` starts in every run.
  bool Before(int a, int b) const { return (Row(b)[a / 64] >> (a % 64)) & 1; }

 private:
  uint64_t* Row(int i) { return bits_.data() + static_cast<size_t>(i) * words_; }
  const uint64_t* Row(int i) const { return bits_.data() + static_cast<size_t>(i) * words_; }
  int n_, words_;
  std::vector<uint64_t> bits_;
};

struct Buffer {
  SharedBuffer out;
  std::string device;
  std::vector<int> ops;  // every op that touched its blobs so far
  int freed_at = -1;     // the op after which it became free
};

}  // namespace

MemoryPlan PlanMemory(const NetDef& net, const MemoryPlanOptions& options) {
  const bool dag = options.order == MemoryPlanOptions::Order::kDag ||
                   (options.order == MemoryPlanOptions::Order::kNetType && net.type() == "dag");
  std::map<std::string, BlobUse> uses;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    const bool aliases = op.type() == "Alias";
    const bool non_tensor = kNonTensorMakers.count(op.type()) > 0;
    auto touch = [&](const std::string& name, bool write) {
      BlobUse& u = uses[name];
      if (u.first < 0) {
        u.first = i;
        u.first_writes = write;
        u.device = DeviceKey(net.device_option(), op);
      }
      if (u.ops.empty() || u.ops.back() != i) u.ops.push_back(i);
      u.last = i;
      if (aliases || (write && non_tensor)) u.excluded = true;
    };
    for (const auto& in : op.input()) touch(in, false);
    for (const auto& out : op.output()) touch(out, true);
  }
  for (const auto& name : net.external_input()) uses[name].excluded = true;
  for (const auto& name : net.external_output()) uses[name].excluded = true;
  for (const auto& name : options.keep) {
    auto it = uses.find(name);
    if (it != uses.end()) it->second.excluded = true;
  }

  std::unique_ptr<Ancestry> ancestry;
  if (dag) ancestry = std::make_unique<Ancestry>(net);
  auto bytes_of = [&](const std::string& name) -> int64_t {
    auto it = options.bytes.find(name);
    return it == options.bytes.end() ? -1 : it->second;
  };

  MemoryPlan plan;
  std::vector<Buffer> buffers;
  std::vector<size_t> free_list;  // indices into buffers, in the order they were freed
  std::map<std::string, size_t> assigned;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    // The blobs this op writes first take a free buffer (or a new one).
    for (const auto& out : op.output()) {
      const BlobUse& u = uses.at(out);
      if (u.excluded || !u.first_writes || u.first != i || assigned.count(out)) continue;
      const int64_t need = bytes_of(out);
      int best = -1;
      for (int k = static_cast<int>(free_list.size()) - 1; k >= 0; --k) {
        const Buffer& b = buffers[free_list[k]];
        if (b.device != u.device) continue;
        if (dag && !std::all_of(b.ops.begin(), b.ops.end(),
                                [&](int o) { return ancestry->Before(o, i); })) {
          continue;
        }
        if (best < 0) {
          best = k;  // the most recently freed
          if (need < 0) break;
          continue;
        }
        // Known size: the smallest buffer that holds it, else the largest.
        const int64_t have = b.out.bytes, cur = buffers[free_list[best]].out.bytes;
        const bool fits = have >= need, cur_fits = cur >= need;
        if ((fits && (!cur_fits || have < cur)) || (!fits && !cur_fits && have > cur)) best = k;
      }
      size_t index;
      if (best >= 0) {
        index = free_list[best];
        free_list.erase(free_list.begin() + best);
      } else {
        index = buffers.size();
        Buffer b;
        b.out.name = options.prefix + std::to_string(index);
        b.device = u.device;
        buffers.push_back(b);
      }
      Buffer& b = buffers[index];
      b.out.blobs.push_back(out);
      b.out.bytes = std::max(b.out.bytes, need);
      assigned[out] = index;
      plan.renames[out] = b.out.name;
      ++plan.blobs_shared;
      if (need >= 0) plan.bytes_before += need;
    }
    // Then the blobs whose last use this is free their buffers.
    std::set<std::string> done;
    for (const auto* names : {&op.input(), &op.output()}) {
      for (const auto& name : *names) {
        auto a = assigned.find(name);
        if (a == assigned.end() || uses.at(name).last != i || !done.insert(name).second) continue;
        Buffer& b = buffers[a->second];
        const std::vector<int>& ops = uses.at(name).ops;
        b.ops.insert(b.ops.end(), ops.begin(), ops.end());
        b.freed_at = i;
        free_list.push_back(a->second);
      }
    }
  }
  for (const auto& b : buffers) {
    plan.buffers.push_back(b.out);
    if (b.out.bytes > 0) plan.bytes_after += b.out.bytes;
  }
  return plan;
}

std::map<std::string, int64_t> InferBlobBytes(const NetDef& net,
                                              std::map<std::string, TensorShape> known) {
  std::map<std::string, int64_t> bytes;
  for (const auto& op : net.op()) {
    const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
    std::vector<TensorShape> in;
    bool all_known = true;
    for (const auto& name : op.input()) {
      auto it = known.find(name);
      all_known &= it != known.end() && !it->second.unknown;
      in.push_back(it == known.end() ? TensorShape{{}, DataType::UNDEFINED, true} : it->second);
    }
    std::vector<TensorShape> out;
    if (schema && schema->HasShapeInference() && all_known) {
      try {
        out = schema->InferShapes(op, in);
      } catch (const EnforceNotMet&) {
        out.clear();  // the op would fail at run time; its outputs stay unknown
      }
    }
    for (int i = 0; i < op.output_size(); ++i) {
      const std::string& name = op.output(i);
      if (i < static_cast<int>(out.size()) && !out[i].unknown) {
        known[name] = out[i];
        bytes[name] = out[i].numel() * static_cast<int64_t>(DataTypeSize(out[i].dtype));
      } else if (!known.count(name) || known[name].unknown) {
        known[name] = TensorShape{{}, DataType::UNDEFINED, true};
      }
    }
  }
  return bytes;
}

void ApplyMemoryPlan(const MemoryPlan& plan, NetDef* net) {
  auto rename = [&](std::string* name) {
    auto it = plan.renames.find(*name);
    if (it != plan.renames.end()) *name = it->second;
  };
  for (auto& op : *net->mutable_op()) {
    for (auto& in : *op.mutable_input()) rename(&in);
    for (auto& out : *op.mutable_output()) rename(&out);
  }
}

std::string MemoryPlan::Summary(bool detail) const {
  std::ostringstream s;
  char mb[64];
  s << "memory plan: " << blobs_shared << " blobs on " << buffers.size() << " shared buffers";
  if (bytes_before > 0) {
    std::snprintf(mb, sizeof(mb), " (%.1f MB -> %.1f MB of known size)", bytes_before / 1048576.0,
                  bytes_after / 1048576.0);
    s << mb;
  }
  s << "\n";
  if (!detail) return s.str();
  for (const auto& b : buffers) {
    s << "  " << b.name;
    if (b.bytes >= 0) {
      std::snprintf(mb, sizeof(mb), " %.2f MB", b.bytes / 1048576.0);
      s << mb;
    }
    s << ":";
    for (const auto& name : b.blobs) s << " " << name;
    s << "\n";
  }
  return s.str();
}

}  // namespace halfcaf
