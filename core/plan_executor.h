// Runs a Caffe2 PlanDef: multi-step jobs (initialise, then loop: train, test every N) as one
// portable file. Caffe2's semantics, field by field:
//   PlanDef.network          the nets: each is created once in a workspace, when the first step
//                            there that uses it starts (a net of that name already in the plan's
//                            workspace is replaced then; two nets of one name are an error)
//   execution_step           run in order; each either runs networks or substeps, never both
//   network                  one iteration runs these nets in order
//   substep                  one iteration runs these steps in order (recursively)
//   num_iter                 iterations (absent: 1); not with should_stop_blob
//   should_stop_blob         a bool scalar checked after each net or substep: true ends the step;
//                            with it and no num_iter the step loops until it is true; the blob
//                            must exist when the step starts (empty counts as false)
//   only_once                with should_stop_blob: one iteration (an error without it)
//   concurrent_substeps      the substeps of an iteration run at once, one thread each; the first
//                            error stops the others (they start no new iteration) and is rethrown
//   num_concurrent_instances that many threads per substep (concurrent execution even without
//                            concurrent_substeps)
//   report_net               runs every report_interval seconds on its own thread while the step
//                            runs, and once when it ends (report_interval is required)
//   run_every_ms             a substep with it is not run in the iteration loop: it runs every
//                            run_every_ms on its own thread while its parent step runs, and once
//                            when the parent ends
//   create_workspace         the step runs in a fresh child workspace (core/workspace.h) each time
//                            it starts, with its own nets; the parent's blobs stay visible
//   criteria_network         deprecated in Caffe2 and refused here with a clear error
// Errors (a malformed step, an unknown net, a failing net, in any thread) are thrown as
// EnforceNotMet naming the step.
#pragma once

#include <cstdint>
#include <functional>

#include "core/workspace.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Asked before every iteration of every step with that step's iteration number; false ends the
// step early, quietly (e.g. on SIGINT).
using PlanShouldContinue = std::function<bool(int64_t)>;

void RunPlan(const PlanDef& plan, Workspace* ws, const PlanShouldContinue& should_continue = {});

// The structural errors of a plan (both substeps and networks, an unknown net, num_iter with
// should_stop_blob, only_once without it, report_net without report_interval, negative counts,
// criteria_network), found before anything runs; RunPlan checks them first.
void CheckPlan(const PlanDef& plan);

}  // namespace halfcaf
