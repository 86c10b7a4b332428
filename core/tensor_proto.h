// Tensor <-> TensorProto, with Caffe2's storage rules (FLOAT16 as uint16 bit patterns in
// int32_data, and halfcaf's BFLOAT16 the same way; small integer types and BOOL in int32_data;
// raw_data accepted on read).
#pragma once

#include <string>

#include "core/tensor.h"
#include "core/workspace.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Fills `proto` (name, dims, data_type, data) from a tensor on any device.
void TensorToProto(const Tensor& tensor, const std::string& name, TensorProto* proto);
// Fills a CPU tensor from `proto`; throws naming the tensor if its data does not match its dims.
void TensorFromProto(const TensorProto& proto, Tensor* tensor);

// TensorProtos files written here end with a CRC-32 (zlib) of every byte before it, so that
// corruption is caught on reading. Binary files: one more TensorProtos field (number 2^29 - 1,
// length-delimited: "HCAFCRC1" + the CRC little-endian), which protobuf readers, Caffe2's
// included, skip as unknown. Text files: a last comment line "# halfcaf-crc32 XXXXXXXX".
enum class Checksum {
  kIfPresent,  // verify a checksum when the file has one (files from Caffe2 have none)
  kRequired,   // a file without one is an error too (checkpoints)
};
// `bytes` (a serialized or printed TensorProtos) followed by its checksum record.
std::string AppendChecksum(const std::string& bytes, bool text);
// Parses TensorProtos content (text or binary) after verifying its checksum; errors name `source`.
void ParseTensorProtos(const std::string& content, const std::string& source, Checksum checksum,
                       TensorProtos* protos);
void ReadTensorProtosFile(const std::string& path, Checksum checksum, TensorProtos* protos);
// Writes protos with a checksum (text for .pbtxt and the like, binary otherwise), atomically.
void WriteTensorProtosFile(const TensorProtos& protos, const std::string& path);

// Feeds every TensorProto of a file (text or binary TensorProtos) into ws by name.
// Returns the number of blobs fed.
int FeedTensorProtosFile(const std::string& path, Workspace* ws,
                         Checksum checksum = Checksum::kIfPresent);
// Writes the named blobs as a TensorProtos file (text for .pbtxt, binary otherwise), atomically.
void WriteBlobsToFile(const Workspace& ws, const std::vector<std::string>& names,
                      const std::string& path);
// The float, double, float16 and bfloat16 values of `proto` that are inf or NaN (0 for other
// types).
int64_t CountNonFinite(const TensorProto& proto);

}  // namespace halfcaf
