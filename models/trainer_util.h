// Helpers the Trainer's files share (models/trainer*.cc); not an interface of its own.
#pragma once

#include <string>

#include "core/context.h"
#include "core/workspace.h"
#include "models/op_sequence.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Forward ops in test mode: BatchNorm uses its running statistics, Dropout passes through.
NetDef TestModeForward(const NetDef& forward);

// Ops that stay on the CPU whatever the device: the iteration counter and its fill (the data
// reader too, handled where it is placed).
bool StaysOnCpu(const OperatorDef& op);

// Puts every op of `net` on `device`, except those that must stay on the CPU: the data reader,
// the iteration counter and its fill. The reader's outputs are copied to the device. An op's
// random seed, where it has one, stays.
void PlaceOnDevice(NetDef* net, Device device, const std::string& data, const std::string& label);

// The first element of a numeric blob (float, float16, bfloat16, int64, int32; on any device) as
// a float; throws naming the blob when it is absent, empty or not a number.
float ReadScalarBlob(const Workspace& ws, const std::string& blob);

// Every input and output `from` of `net`'s ops becomes `to`.
void RenameBlob(const std::string& from, const std::string& to, NetDef* net);

// Sums of the loss and accuracy over the steps since the last ReadStats, kept on the device.
extern const char kWindowLoss[];
extern const char kWindowAccuracy[];

}  // namespace halfcaf
