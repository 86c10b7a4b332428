// Rendezvous and world operators (Caffe2's caffe2/distributed store handlers and
// caffe2/contrib/gloo common-world ops): FileStoreHandlerCreate, RedisStoreHandlerCreate,
// CreateCommonWorld, CloneCommonWorld, DestroyCommonWorld, Barrier. None touches tensor data, so
// the same CPU classes also serve ops placed on CUDA.
#include "core/gradient.h"
#include "core/operator.h"
#include "distributed/collective_op.h"
#include "distributed/store_handler.h"

namespace halfcaf {
namespace {

class FileStoreHandlerCreateOp final : public Operator<CPUContext> {
 public:
  FileStoreHandlerCreateOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        path_(GetSingleArgument<std::string>("path", "")),
        prefix_(GetSingleArgument<std::string>("prefix", "")) {
    HALFCAF_ENFORCE(!path_.empty(), "FileStoreHandlerCreate: argument 'path' is required");
  }
  void RunOnDevice() override {
    OutputBlob(0)->Reset<StoreHandler>(CreateFileStoreHandler(path_, prefix_));
  }

 private:
  std::string path_, prefix_;
};

class RedisStoreHandlerCreateOp final : public Operator<CPUContext> {
 public:
  RedisStoreHandlerCreateOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        host_(GetSingleArgument<std::string>("host", "")),
        port_(GetSingleArgument<int>("port", 0)),
        prefix_(GetSingleArgument<std::string>("prefix", "")) {
    HALFCAF_ENFORCE(!host_.empty(), "RedisStoreHandlerCreate: argument 'host' is required");
    HALFCAF_ENFORCE(port_ > 0 && port_ < 65536,
                    "RedisStoreHandlerCreate: argument 'port' must be in 1..65535, got ", port_);
  }
  void RunOnDevice() override {
    OutputBlob(0)->Reset<StoreHandler>(CreateRedisStoreHandler(host_, port_, prefix_));
  }

 private:
  std::string host_;
  int port_;
  std::string prefix_;
};

class CreateCommonWorldOp final : public Operator<CPUContext> {
 public:
  CreateCommonWorldOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), support_(*this) {
    HALFCAF_ENFORCE(def.has_name() && !def.name().empty(),
                    "CreateCommonWorld requires a name (it prefixes the world's keys in the store)");
    options_.size = GetSingleArgument<int>("size", 0);
    options_.rank = GetSingleArgument<int>("rank", 0);
    HALFCAF_ENFORCE(options_.rank >= 0 && options_.rank < options_.size,
                    "CreateCommonWorld: expected 0 <= rank < size, got rank ", options_.rank,
                    " and size ", options_.size);
    const int timeout_ms = GetSingleArgument<int>("timeout_ms", -1);
    if (timeout_ms != -1) options_.timeout_ms = timeout_ms;  // -1: Gloo's default, 30 s
    options_.transport = GetSingleArgument<std::string>("transport", "tcp");
    options_.interface = GetSingleArgument<std::string>("interface", "");
    options_.name = def.name();
  }
  void RunOnDevice() override {
    const Blob& in = InputBlob(0);
    HALFCAF_ENFORCE(in.IsType<StoreHandler>(), "CreateCommonWorld: input 0 ('", input_name(0),
                    "') must be a store handler (FileStoreHandlerCreate, RedisStoreHandlerCreate)"
                    ", it holds ", in.TypeName());
    auto store = in.GetShared<StoreHandler>();
    support_.Run([&] { OutputBlob(0)->Reset(CommonWorld::Create(*store, options_)); });
  }

 private:
  CollectiveOpSupport support_;
  CommonWorldOptions options_;
};

class CloneCommonWorldOp final : public Operator<CPUContext> {
 public:
  CloneCommonWorldOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), support_(*this) {}
  void RunOnDevice() override {
    auto world = support_.World(0);
    support_.Run([&] { OutputBlob(0)->Reset(world->Clone()); });
  }

 private:
  CollectiveOpSupport support_;
};

class DestroyCommonWorldOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    if (InputBlob(0).empty()) return;  // never created: nothing to close (as in Caffe2)
    CollectiveOpSupport(*this).World(0)->Close();
  }
};

class BarrierOp final : public Operator<CPUContext> {
 public:
  BarrierOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), support_(*this) {}
  void RunOnDevice() override {
    auto world = support_.World(0);
    support_.Run([&] { world->Barrier(); });
  }

 private:
  CollectiveOpSupport support_;
};

}  // namespace

HALFCAF_REGISTER_DISTRIBUTED_OP(FileStoreHandlerCreate, FileStoreHandlerCreateOp, true);
HALFCAF_REGISTER_DISTRIBUTED_OP(RedisStoreHandlerCreate, RedisStoreHandlerCreateOp, true);
HALFCAF_REGISTER_DISTRIBUTED_OP(CreateCommonWorld, CreateCommonWorldOp, true);
HALFCAF_REGISTER_DISTRIBUTED_OP(CloneCommonWorld, CloneCommonWorldOp, true);
HALFCAF_REGISTER_DISTRIBUTED_OP(DestroyCommonWorld, DestroyCommonWorldOp, true);
HALFCAF_REGISTER_DISTRIBUTED_OP(Barrier, BarrierOp, true);
NO_GRADIENT(FileStoreHandlerCreate);
NO_GRADIENT(RedisStoreHandlerCreate);
NO_GRADIENT(CreateCommonWorld);
NO_GRADIENT(CloneCommonWorld);
NO_GRADIENT(DestroyCommonWorld);
NO_GRADIENT(Barrier);

OPERATOR_SCHEMA(FileStoreHandlerCreate)
    .NumInputs(0)
    .NumOutputs(1)
    .SetDoc("Creates a store handler for rendezvous through a folder every process can reach "
            "(/tmp on one machine, a shared file system between machines): one file per key in "
            "path/prefix, written atomically. Keys are never removed: use a new folder or prefix "
            "per run.")
    .Arg("path", "folder of the store (created if missing); required")
    .Arg("prefix", "sub-folder for this store's keys (default none)")
    .Output(0, "handler", "the store handler, input of CreateCommonWorld");

OPERATOR_SCHEMA(RedisStoreHandlerCreate)
    .NumInputs(0)
    .NumOutputs(1)
    .SetDoc("Creates a store handler for rendezvous through a Redis server (Gloo's Redis store). "
            "Keys are prefix + key and live until the server restarts: use a new prefix per "
            "run.")
    .Arg("host", "Redis server host; required")
    .Arg("port", "Redis server port; required")
    .Arg("prefix", "prepended to every key (default none)")
    .Output(0, "handler", "the store handler, input of CreateCommonWorld");

OPERATOR_SCHEMA(CreateCommonWorld)
    .NumInputs(1)
    .NumOutputs(1)
    .SetDoc("Connects `size` processes to each other over Gloo (engine GLOO). Each process runs "
            "it with its own `rank`; they meet through the store handler under keys prefixed by "
            "the op's name (required, the same on every rank), so several worlds can share a "
            "store. Every rank first announces itself and waits for the others: a rank that does "
            "not arrive within timeout_ms fails the op naming the missing ranks. Then every rank "
            "connects to every other (full mesh). `timeout_ms` also bounds every send and receive "
            "of the collectives run on the world. A failure throws, or with `status_blob` is "
            "recorded there (int32 [1] = 1) and the net goes on, as in Caffe2.")
    .Arg("size", "number of processes")
    .Arg("rank", "this process, 0 <= rank < size")
    .Arg("timeout_ms", "rendezvous and per-operation timeout in ms; -1 (default): 30 s")
    .Arg("transport", "tcp (default) or ibverbs")
    .Arg("interface", "network interface (e.g. eth0, lo); default: the host name's address")
    .Arg("status_blob", "blob recording a communication failure instead of throwing")
    .Input(0, "store_handler", "from FileStoreHandlerCreate or RedisStoreHandlerCreate")
    .Output(0, "comm_world", "the common world");

OPERATOR_SCHEMA(CloneCommonWorld)
    .NumInputs(1)
    .NumOutputs(1)
    .SetDoc("A new common world over the same processes with its own connections, set up through "
            "the existing world (no store). Every rank must run it. Collectives on the clone "
            "never mix with those on the original (e.g. a second thread's exchange).")
    .Arg("status_blob", "blob recording a communication failure instead of throwing")
    .Input(0, "existing_comm_world", "the world to clone")
    .Output(0, "comm_world", "the clone");

OPERATOR_SCHEMA(DestroyCommonWorld)
    .NumInputs(1)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .SetDoc("Closes the world's connections: peers blocked on this process fail at once instead "
            "of at their timeout. An empty blob (a world never created) is left alone.")
    .Input(0, "comm_world", "the common world")
    .Output(0, "comm_world", "the same blob, closed");

OPERATOR_SCHEMA(Barrier)
    .NumInputs(1)
    .NumOutputs(0)
    .SetDoc("Blocks until every rank of the world has reached it (Gloo's all-to-one barrier on "
            "rank 0, as in Caffe2).")
    .Arg("status_blob", "blob recording a communication failure instead of throwing")
    .Input(0, "comm_world", "the common world");

}  // namespace halfcaf
