#include "models/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <memory>
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

// Blobs that must be one buffer: a blob and the outputs that run in place on it, in order.
struct Group {
  std::vector<std::string> blobs;
  std::string device;
  std::vector<int> ops;  // every op touching them
  int first = 0, last = 0;
  int64_t bytes = -1;    // the largest known size (-1: none known)
};

struct Buffer {
  SharedBuffer out;
  std::string device;
  std::vector<const Group*> groups;
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
  // Whether every op of `a` finishes before any op of `b` starts (b's ops all follow its first).
  auto before = [&](const Group& a, const Group& b) {
    if (!dag) return a.last < b.first;
    return std::all_of(a.ops.begin(), a.ops.end(),
                       [&](int o) { return o != b.first && ancestry->Before(o, b.first); });
  };

  // 1. Groups: each shareable blob, with the outputs that run in place on it (an output takes
  // the input its op reads for the last time, when the schema allows the pair to be one blob).
  std::vector<std::unique_ptr<Group>> groups;
  std::map<std::string, Group*> group_of;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
    std::set<Group*> continued;  // one in-place output per input group and op
    for (int oi = 0; oi < op.output_size(); ++oi) {
      const std::string& out = op.output(oi);
      const BlobUse& u = uses.at(out);
      if (u.excluded || !u.first_writes || u.first != i || group_of.count(out)) continue;
      Group* g = nullptr;
      for (int k = 0; k < op.input_size() && schema && !g; ++k) {
        const std::string& in = op.input(k);
        auto it = group_of.find(in);
        if (it == group_of.end() || it->second->blobs.back() != in || uses.at(in).last != i ||
            it->second->device != u.device || !schema->AllowsInplace(k, oi) ||
            continued.count(it->second) ||
            std::count(op.input().begin(), op.input().end(), in) != 1) {
          continue;
        }
        // Concurrent readers of the input would see it overwritten.
        const std::vector<int>& in_ops = uses.at(in).ops;
        if (dag && !std::all_of(in_ops.begin(), in_ops.end(),
                                [&](int o) { return o == i || ancestry->Before(o, i); })) {
          continue;
        }
        g = it->second;
      }
      if (g) {
        continued.insert(g);
      } else {
        groups.push_back(std::make_unique<Group>());
        g = groups.back().get();
        g->device = u.device;
        g->first = i;
      }
      g->blobs.push_back(out);
      group_of[out] = g;
      g->bytes = std::max(g->bytes, bytes_of(out));
    }
  }
  for (auto& g : groups) {
    for (const auto& name : g->blobs) {
      const BlobUse& u = uses.at(name);
      g->ops.insert(g->ops.end(), u.ops.begin(), u.ops.end());
      g->last = std::max(g->last, u.last);
    }
    std::sort(g->ops.begin(), g->ops.end());
    g->ops.erase(std::unique(g->ops.begin(), g->ops.end()), g->ops.end());
  }

  // 2. Buffers, largest groups first (greedy by size): a group joins the smallest buffer of its
  // device that holds it and whose groups all come before or after it, else the largest such
  // buffer (which grows), else a new one. Smaller groups then fill the gaps of larger ones.
  std::vector<Group*> order;
  for (auto& g : groups) order.push_back(g.get());
  std::stable_sort(order.begin(), order.end(), [](const Group* a, const Group* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  std::vector<Buffer> buffers;
  MemoryPlan plan;
  for (Group* g : order) {
    int best = -1;
    for (int k = 0; k < static_cast<int>(buffers.size()); ++k) {
      const Buffer& b = buffers[k];
      if (b.device != g->device) continue;
      const bool free = std::all_of(b.groups.begin(), b.groups.end(), [&](const Group* h) {
        return before(*h, *g) || before(*g, *h);
      });
      if (!free) continue;
      if (best < 0) {
        best = k;
        continue;
      }
      const int64_t have = b.out.bytes, cur = buffers[best].out.bytes;
      const bool fits = have >= g->bytes, cur_fits = cur >= g->bytes;
      if ((fits && (!cur_fits || have < cur)) || (!fits && !cur_fits && have > cur)) best = k;
    }
    if (best < 0) {
      best = static_cast<int>(buffers.size());
      buffers.emplace_back();
      buffers.back().out.name = options.prefix + std::to_string(best);
      buffers.back().device = g->device;
    }
    Buffer& b = buffers[best];
    b.groups.push_back(g);
    b.out.bytes = std::max(b.out.bytes, g->bytes);
  }
  for (auto& b : buffers) {
    std::sort(b.groups.begin(), b.groups.end(),
              [](const Group* x, const Group* y) { return x->first < y->first; });
    for (const Group* g : b.groups) {
      for (const auto& name : g->blobs) {
        b.out.blobs.push_back(name);
        plan.renames[name] = b.out.name;
        ++plan.blobs_shared;
        const int64_t n = bytes_of(name);
        if (n >= 0) plan.bytes_before += n;
      }
      plan.in_place += static_cast<int64_t>(g->blobs.size()) - 1;
    }
    plan.buffers.push_back(b.out);
    if (b.out.bytes > 0) plan.bytes_after += b.out.bytes;
  }
  return plan;
}

std::map<std::string, TensorShape> WorkspaceTensorShapes(const Workspace& ws) {
  std::map<std::string, TensorShape> known;
  for (const auto& name : ws.Blobs()) {
    const Blob* b = ws.GetBlob(name);
    if (b && b->IsTensor())
      known[name] = TensorShape{b->GetTensor().dims(), b->GetTensor().dtype()};
  }
  return known;
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
  if (in_place > 0) s << " (" << in_place << " ops in place)";
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
