// Multi-process data parallelism for train_net and benchmark: the flags (--num_shards,
// --shard_id, --rendezvous, --run_id, --gloo_interface, --gloo_timeout_s, --allreduce,
// --bucket_mb), mpirun's environment (OMPI_COMM_WORLD_RANK / _SIZE), and joining the run.
#pragma once

#include <string>

namespace halfcaf {

struct TrainerOptions;

// Where this process stands in a multi-process run.
struct Shards {
  int size = 1, rank = 0;
  std::string rendezvous, run_id;
  bool temp_rendezvous = false;  // a folder in /tmp made for this mpirun job (removed at the end)
};

// From the flags, else mpirun's environment, else one process. Checks the flags (one-line
// errors naming them); without Gloo, more than one process says how to get it.
Shards ShardsFromFlags();
// More than one process: meets the others at the rendezvous (bounded by --gloo_timeout_s) and
// sets options->world, the all-reduce algorithm and the bucket size. `tool` names the world.
void JoinRun(const Shards& shards, const std::string& tool, TrainerOptions* options);
// Rank 0 removes the /tmp rendezvous folder it made for an mpirun job (at the end of the run).
void RemoveTempRendezvous(const Shards& shards);
// Discards what is written to std::cout (ranks other than 0 speak only on errors).
void SilenceStdout();

}  // namespace halfcaf
