// Memory planning (Caffe2's memonger, done automatically): blobs whose lifetimes do not overlap
// share one buffer. A net's temporaries (activations, their gradients, casts, scratch outputs)
// are renamed onto a few shared blobs, so a training step needs the memory of what is alive at
// once rather than of every blob it writes.
//
// A blob is shared only when the net's first access to it writes it (so nothing it held before
// the step is read), it is not an external input or output of the net, not in `keep` (state the
// caller reads between runs: parameters, their gradients, optimizer and loss-scale state, the
// loss, anything fetched), not made by an op that creates a non-tensor object, and not touched by
// Alias (whose output shares its input's storage). Two blobs share only on the same device, and
// only when every op touching the first comes before the first write of the second: in list
// order for the simple executor; for the dag executor, before it in the dependency graph (so
// the sharing adds no ordering the graph did not already have). Each shared buffer grows to the
// largest of its blobs (Tensor keeps storage that is large enough). An output takes the buffer
// of an input its op reads for the last time when the op's schema allows the two to be one blob
// (ReluGradient's dY -> dX, the Sum of a gradient's parts, ...), so such ops run in place; in a
// forward net with its gradient, the gradient ops still read the forward inputs, so only what
// nobody needs afterwards is overwritten.
//
//   MemoryPlanOptions o;
//   o.keep = {"loss", "fc_w", "fc_w_grad", ...};
//   MemoryPlan plan = PlanMemory(net, o);
//   ApplyMemoryPlan(plan, &net);          // and to every other net holding these ops
//   std::cout << plan.Summary();
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/op_schema.h"
#include "core/workspace.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct MemoryPlanOptions {
  std::set<std::string> keep;  // never shared
  // Plan for the dag executor (concurrent ops); else for list order. Default: the net's type.
  enum class Order { kNetType, kList, kDag } order = Order::kNetType;
  // Sizes in bytes of the blobs, where known (e.g. from a shape inference): a blob then takes
  // the free buffer that fits it best. Unknown blobs take the most recently freed buffer.
  std::map<std::string, int64_t> bytes;
  // Names of the shared blobs: prefix + number.
  std::string prefix = "__shared_";
};

struct SharedBuffer {
  std::string name;                // the blob every user is renamed to
  std::vector<std::string> blobs;  // in the order they use it
  int64_t bytes = -1;              // the largest known size of its blobs (-1: none known)
};

struct MemoryPlan {
  std::map<std::string, std::string> renames;  // blob -> shared buffer
  std::vector<SharedBuffer> buffers;
  int64_t blobs_shared = 0;
  int64_t in_place = 0;  // outputs that took the buffer of an input their op read last

  // Over the blobs of known size: their total, and the shared buffers' total.
  int64_t bytes_before = 0, bytes_after = 0;
  // "memory plan: 412 blobs on 37 shared buffers (1630 MB -> 212 MB of known size)", and with
  // `detail` one line per buffer.
  std::string Summary(bool detail = false) const;
};

MemoryPlan PlanMemory(const NetDef& net, const MemoryPlanOptions& options);

// Bytes of every blob `net` writes whose shape follows, op after op, from `known` (e.g. the
// parameters' and the data's shapes) through the operators' shape inference; blobs an op
// without inference (or with unknown inputs) writes are left out. For MemoryPlanOptions::bytes.
std::map<std::string, int64_t> InferBlobBytes(const NetDef& net,
                                              std::map<std::string, TensorShape> known);

// The shapes and dtypes of the tensors `ws` holds (the parameters once an init net has run), for
// InferBlobBytes's `known`.
std::map<std::string, TensorShape> WorkspaceTensorShapes(const Workspace& ws);

// Renames every input and output of `net` that the plan shares (ops of other nets that were
// part of the planned one, e.g. its pieces, get the same names).
void ApplyMemoryPlan(const MemoryPlan& plan, NetDef* net);

}  // namespace halfcaf
