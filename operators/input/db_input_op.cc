#include "operators/input/db_input_op.h"

#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "core/gradient.h"
#include "core/tensor_proto.h"

namespace halfcaf {

namespace {

// Caffe2 gives BYTE tensors as uint8.
DataType StoredType(const TensorProto& p) {
  const DataType dt = DataTypeFromInt(p.data_type());
  return dt == DataType::BYTE ? DataType::UINT8 : dt;
}

std::vector<int64_t> ProtoDims(const TensorProto& p) {
  return std::vector<int64_t>(p.dims().begin(), p.dims().end());
}

}  // namespace

// ---- CreateDB ----------------------------------------------------------------------------------

CreateDBOp::CreateDBOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      db_type_(GetSingleArgument<std::string>("db_type", "leveldb")),
      db_(GetSingleArgument<std::string>("db", "")),
      num_shards_(GetSingleArgument<int>("num_shards", 1)),
      shard_id_(GetSingleArgument<int>("shard_id", 0)) {
  HALFCAF_ENFORCE(!db_.empty(), "CreateDB needs the argument 'db' (the path of the ", db_type_,
                  " DB)");
  HALFCAF_ENFORCE(num_shards_ >= 1, "CreateDB: num_shards must be >= 1, got ", num_shards_);
  HALFCAF_ENFORCE(shard_id_ >= 0 && shard_id_ < num_shards_,
                  "CreateDB: shard_id must be in [0, num_shards = ", num_shards_, "), got ",
                  shard_id_);
}

void CreateDBOp::RunOnDevice() {
  Blob* blob = OutputBlob(0);
  // Close a reader this blob already holds first: a LevelDB can be open only once per process.
  // An input op's prefetch thread may still be reading a batch from it (it holds the reader only
  // while it reads): wait until the last user lets it go.
  std::weak_ptr<db::DBReader> old;
  if (blob->IsType<db::DBReader>()) old = blob->GetShared<db::DBReader>();
  const std::string old_name = old.expired() ? "" : old.lock()->Describe();
  blob->Reset();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(kCreateDBWaitSeconds);
  while (!old.expired()) {
    HALFCAF_ENFORCE(std::chrono::steady_clock::now() < deadline, "CreateDB: the previous reader "
                    "of blob '", output_name(0), "' (", old_name, ") is still in use after ",
                    kCreateDBWaitSeconds, " s; it must be closed before the DB is opened again");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  blob->Reset(std::make_shared<db::DBReader>(db_type_, db_, num_shards_, shard_id_));
}

REGISTER_CPU_OPERATOR(CreateDB, CreateDBOp);
NO_GRADIENT(CreateDB);

OPERATOR_SCHEMA(CreateDB)
    .NumInputs(0)
    .NumOutputs(1)
    .SetDoc("Opens an existing key-value DB for reading and stores a DB reader (not a tensor) in "
            "its output blob, for TensorProtosDBInput. Each run reopens the DB, so reading "
            "starts again at the first record (if an input op's background thread is still "
            "reading a batch from the previous reader, CreateDB waits until it is done, as a "
            "LevelDB can be open only once per process). A missing or unreadable DB, or a "
            "db_type this build lacks (LevelDB and LMDB are optional at build time: "
            "libleveldb-dev, liblmdb-dev), fails with a message naming the type and the path.")
    .Output(0, "db_reader", "the DB reader (a non-tensor blob)")
    .Arg("db_type", "string, default leveldb: leveldb or lmdb (case-insensitive)")
    .Arg("db", "string, required: path of the DB (a folder for both leveldb and lmdb)")
    .Arg("num_shards", "int, default 1: readers that split the DB between them")
    .Arg("shard_id", "int, default 0: this reader reads records shard_id, shard_id + num_shards, "
                     "...");

// ---- TensorProtosDBInput -----------------------------------------------------------------------

TensorProtosDBInputOp::TensorProtosDBInputOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      batch_size_(GetSingleArgument<int64_t>("batch_size", 0)),
      batch_(static_cast<size_t>(OutputSize())),
      prefetcher_(!GetSingleArgument<bool>("no_prefetch", false),
                  {nullptr,
                   [this](const std::shared_ptr<const db::DBReader>& r) { Produce(r); },
                   nullptr},
                  DebugName()) {
  HALFCAF_ENFORCE(batch_size_ >= 0, "TensorProtosDBInput: batch_size must be >= 0, got ",
                  batch_size_);
}

TensorProtosDBInputOp::~TensorProtosDBInputOp() { prefetcher_.Stop(); }

void TensorProtosDBInputOp::ParseRecord(const db::DBReader& reader, int64_t item) {
  auto where = [&] {
    return MakeString("record '", key_, "' of ", reader.Describe(),
                      batch_size_ > 0 ? MakeString(" (item ", item, " of the batch)") : "");
  };
  HALFCAF_ENFORCE(protos_.ParseFromString(value_), where(), " is not a serialized TensorProtos (",
                  value_.size(), " bytes that do not parse)");
  const int n = protos_.protos_size();
  if (!have_layout_) {
    HALFCAF_ENFORCE(n == OutputSize(), where(), " holds ", n, " tensor(s) but the op has ",
                    OutputSize(), " output(s): ", n < OutputSize() ? "more" : "fewer",
                    " outputs than tensors (each output takes one tensor of the record)");
    dims_.clear();
    dtypes_.clear();
    for (int i = 0; i < n; ++i) {
      const TensorProto& p = protos_.protos(i);
      const DataType dt = StoredType(p);
      HALFCAF_ENFORCE(DataTypeSize(dt) > 0, where(), ": tensor ", i, " has type ",
                      DataTypeName(dt), ", which tensors cannot hold");
      dims_.push_back(ProtoDims(p));
      dtypes_.push_back(dt);
    }
    have_layout_ = true;
    return;
  }
  HALFCAF_ENFORCE(n == static_cast<int>(dims_.size()), where(), " holds ", n,
                  " tensor(s) but the first record read held ", dims_.size());
  for (int i = 0; i < n; ++i) {
    const TensorProto& p = protos_.protos(i);
    const std::vector<int64_t> dims = ProtoDims(p);
    HALFCAF_ENFORCE(dims == dims_[i], where(), ": tensor ", i, " has dims ", DimsString(dims),
                    " but in the first record read it has ", DimsString(dims_[i]));
    const DataType dt = StoredType(p);
    HALFCAF_ENFORCE(dt == dtypes_[i], where(), ": tensor ", i, " has type ", DataTypeName(dt),
                    " but in the first record read it has ", DataTypeName(dtypes_[i]));
  }
}

void TensorProtosDBInputOp::Produce(const std::shared_ptr<const db::DBReader>& reader_ptr) {
  const db::DBReader& reader = *reader_ptr;
  if (!SameObject(layout_reader_, reader_ptr)) {  // a new reader (CreateDB ran again): a new
    have_layout_ = false;                          // first record
    layout_reader_ = reader_ptr;
  }
  const int64_t items = batch_size_ > 0 ? batch_size_ : 1;
  std::vector<char*> dst(OutputSize(), nullptr);
  std::vector<size_t> item_bytes(OutputSize(), 0);
  for (int64_t item = 0; item < items; ++item) {
    reader.Read(&key_, &value_);
    ParseRecord(reader, item);
    if (item == 0) {
      for (int i = 0; i < OutputSize(); ++i) {
        std::vector<int64_t> dims = dims_[i];
        if (batch_size_ > 0) dims.insert(dims.begin(), batch_size_);
        Tensor& out = batch_[i];
        out.Resize(dims);
        dst[i] = static_cast<char*>(out.raw_mutable_data(dtypes_[i]));
        item_bytes[i] = out.nbytes() / static_cast<size_t>(items);
      }
    }
    for (int i = 0; i < OutputSize(); ++i) {
      try {
        TensorFromProto(protos_.protos(i), &scratch_);
      } catch (EnforceNotMet& e) {
        e.AddContext(MakeString("record '", key_, "' of ", reader.Describe(), ", tensor ", i));
        throw;
      }
      HALFCAF_ENFORCE(scratch_.nbytes() == item_bytes[i], "record '", key_, "' of ",
                      reader.Describe(), ", tensor ", i, ": ", scratch_.nbytes(),
                      " bytes of data, expected ", item_bytes[i]);
      if (item_bytes[i] > 0) {
        std::memcpy(dst[i] + item * item_bytes[i], scratch_.raw_data(), item_bytes[i]);
      }
    }
  }
}

void TensorProtosDBInputOp::RunOnDevice() {
  const Blob& blob = InputBlob(0);
  HALFCAF_ENFORCE(blob.IsType<db::DBReader>(), "input 0 '", input_name(0),
                  "' is not a DB reader (make one with CreateDB); it holds ",
                  blob.empty() ? "nothing" : (blob.IsTensor() ? "a tensor" : "another object"));
  const std::shared_ptr<const db::DBReader> reader = blob.GetShared<db::DBReader>();
  prefetcher_.Next(reader);
  for (int i = 0; i < OutputSize(); ++i) Output(i)->CopyFrom(batch_[i]);
  prefetcher_.Ahead(reader);
}

REGISTER_CPU_OPERATOR(TensorProtosDBInput, TensorProtosDBInputOp);
NO_GRADIENT(TensorProtosDBInput);

OPERATOR_SCHEMA(TensorProtosDBInput)
    .NumInputs(1)
    .NumOutputs(1, INT_MAX)
    .SetDoc("Reads records from a DB reader (made by CreateDB). Each record's value is a "
            "serialized TensorProtos holding one tensor per output. With batch_size B > 0, output "
            "k stacks tensor k of B consecutive records on a new leading axis: dims [B] + the "
            "record's dims (a scalar label gives [B]); with batch_size 0, one record is read and "
            "each output is its tensor as stored. Outputs keep the stored type (BYTE data is "
            "given as uint8). Each run continues after the records the previous run read; at "
            "the end of the DB reading wraps to the first record. Every record must have the "
            "same tensor count, dims and types as the first one read. As in Caffe2, the next "
            "batch is read on a background thread while the net runs (unless no_prefetch): the "
            "batches are the same as without prefetching, and an error in a record is raised by "
            "the run that consumes its batch. If CreateDB ran again, a batch prefetched from the "
            "old reader is dropped and the run reads from the new one.")
    .Input(0, "db_reader", "the DB reader blob made by CreateDB")
    .Output(0, "tensor_0", "tensor 0 of the records, e.g. the images")
    .Output(1, "tensor_1", "optional: tensor 1 of the records, e.g. the labels (and so on)")
    .Arg("batch_size", "int, default 0: records per batch; 0 reads one record without a batch "
                       "axis")
    .Arg("no_prefetch", "bool, default false: read the records when the op runs instead of "
                        "on a background thread one batch ahead");

}  // namespace halfcaf
