// Caffe2's DB input operators (CPU only; the DB layer is data/db.h).
//
// CreateDB: no inputs; output 0 is a blob holding a db::DBReader (not a tensor) over an existing
//   DB. Args: db_type (string, "leveldb"; also "lmdb"), db (string, required: the path),
//   num_shards (1), shard_id (0). Each run (re)opens the DB, so the reader starts at the first
//   record of its shard. A LevelDB can be open only once per process: a rerun first drops the
//   blob's reader and waits (up to kCreateDBWaitSeconds) until an input op's prefetch thread that
//   is still reading from it has finished with it.
//
// TensorProtosDBInput: input 0 is a DBReader blob; each DB value is a serialized TensorProtos
//   with as many tensors as the op has outputs. With batch_size B > 0, output k is tensor k of B
//   consecutive records stacked on a new leading axis: dims [B] + record dims (a scalar label
//   gives [B]). With batch_size 0 (the default) one record is read and each output is its tensor
//   unchanged. Outputs keep the stored dtype (BYTE is given as uint8). Reading continues where
//   the previous run stopped and wraps to the first record at the end of the DB. Every record
//   must match the first one read (tensor count, dims and dtypes).
//   Prefetching (as Caffe2): after each run a background thread reads and parses the next batch
//   while the net runs (no_prefetch = 1: records are read when the op runs). The batches are the
//   same either way; an error in a record is thrown by the run that consumes its batch. The
//   worker holds the reader only while it reads a batch; a batch prefetched from a reader that the
//   input blob no longer holds (CreateDB ran again) is dropped and the run reads the new reader.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/operator.h"
#include "data/db.h"
#include "data/prefetcher.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// How long a rerun of CreateDB waits for the previous reader of its blob to be released.
constexpr int kCreateDBWaitSeconds = 120;

class CreateDBOp final : public Operator<CPUContext> {
 public:
  CreateDBOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::string db_type_, db_;
  int num_shards_, shard_id_;
};

class TensorProtosDBInputOp final : public Operator<CPUContext> {
 public:
  TensorProtosDBInputOp(const OperatorDef& def, Workspace* ws);
  ~TensorProtosDBInputOp() override;
  void RunOnDevice() override;

 private:
  // Reads one batch from `reader` into batch_ (the producer: the prefetch worker or Run).
  void Produce(const std::shared_ptr<const db::DBReader>& reader);
  // Parses `value_` into `protos_` and checks it against the first record (or makes it the
  // first). `item` is the record's index in the batch (for messages).
  void ParseRecord(const db::DBReader& reader, int64_t item);

  int64_t batch_size_;
  // Producer state. The first record's layout: per tensor, dims and dtype (BYTE stored as UINT8).
  bool have_layout_ = false;
  std::weak_ptr<const db::DBReader> layout_reader_;  // the reader the layout came from
  std::vector<std::vector<int64_t>> dims_;
  std::vector<DataType> dtypes_;
  // Scratch, reused across batches.
  std::string key_, value_;
  TensorProtos protos_;
  Tensor scratch_;
  // The batch: one tensor per output, copied to the outputs by Run.
  std::vector<Tensor> batch_;
  BatchPrefetcher<db::DBReader> prefetcher_;  // last: stopped first
};
}  // namespace halfcaf
