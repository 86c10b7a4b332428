// Caffe2's DB input operators (CPU only; the DB layer is operators/db.h).
//
// CreateDB: no inputs; output 0 is a blob holding a db::DBReader (not a tensor) over an existing
//   DB. Args: db_type (string, "leveldb"; also "lmdb"), db (string, required: the path),
//   num_shards (1), shard_id (0). Each run (re)opens the DB, so the reader starts at the first
//   record of its shard.
//
// TensorProtosDBInput: input 0 is a DBReader blob; each DB value is a serialized TensorProtos
//   with as many tensors as the op has outputs. With batch_size B > 0, output k is tensor k of B
//   consecutive records stacked on a new leading axis: dims [B] + record dims (a scalar label
//   gives [B]). With batch_size 0 (the default) one record is read and each output is its tensor
//   unchanged. Outputs keep the stored dtype (BYTE is given as uint8). Reading continues where
//   the previous run stopped and wraps to the first record at the end of the DB. Every record
//   must match the first one read (tensor count, dims and dtypes). Caffe2 prefetches on a
//   background thread; here records are read when the op runs (no_prefetch is accepted).
#pragma once

#include <string>
#include <vector>

#include "core/operator.h"
#include "operators/db.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

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
  void RunOnDevice() override;

 private:
  // Parses `value_` into `protos_` and checks it against the first record (or makes it the
  // first). `item` is the record's index in the batch (for messages).
  void ParseRecord(const db::DBReader& reader, int64_t item);

  int64_t batch_size_;
  // The first record's layout: per tensor, dims and dtype (BYTE stored as UINT8).
  bool have_layout_ = false;
  const db::DBReader* layout_reader_ = nullptr;  // the reader the layout came from
  std::vector<std::vector<int64_t>> dims_;
  std::vector<DataType> dtypes_;
  // Scratch, reused across runs.
  std::string key_, value_;
  TensorProtos protos_;
  Tensor scratch_;
};

}  // namespace halfcaf
