// Tensor <-> TensorProto, with Caffe2's storage rules (FLOAT16 as uint16 bit patterns in
// int32_data; small integer types and BOOL in int32_data; raw_data accepted on read).
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

// Feeds every TensorProto of a file (text or binary TensorProtos) into ws by name.
// Returns the number of blobs fed.
int FeedTensorProtosFile(const std::string& path, Workspace* ws);
// Writes the named blobs as a TensorProtos file (text for .pbtxt, binary otherwise), atomically.
void WriteBlobsToFile(const Workspace& ws, const std::vector<std::string>& names,
                      const std::string& path);

}  // namespace halfcaf
