// Fuzz target: a TensorProtos file (text or binary) as run_net --inputs and the Load operator
// read it, each TensorProto turned into a Tensor; also one TensorProtos record as the DB input
// operators parse it (binary only).
#include <string>

#include "core/proto_io.h"
#include "core/tensor.h"
#include "core/tensor_proto.h"
#include "proto/halfcaf.pb.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  halfcaf::TensorProtos protos;
  halfcaf::fuzz::ExpectCleanRejection([&] {
    halfcaf::ParseProtoFromString(bytes, "fuzz input", &protos);
    for (const auto& p : protos.protos()) {
      halfcaf::Tensor t;
      halfcaf::fuzz::ExpectCleanRejection([&] { halfcaf::TensorFromProto(p, &t); });
    }
  });
  halfcaf::TensorProto one;
  if (one.ParseFromString(bytes)) {
    halfcaf::Tensor t;
    halfcaf::fuzz::ExpectCleanRejection([&] { halfcaf::TensorFromProto(one, &t); });
  }
  return 0;
}
