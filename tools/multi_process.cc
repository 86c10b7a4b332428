#include "tools/multi_process.h"

#include <gflags/gflags.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <streambuf>

#include "core/enforce.h"
#include "distributed/common_world.h"
#include "models/trainer.h"

// Multi-process data parallelism (Gloo).
DEFINE_int32(num_shards, 0, "processes training together, each on its slice of every batch "
             "(--batch_size is the global batch); 0: mpirun's OMPI_COMM_WORLD_SIZE when started "
             "by mpirun, else 1");
DEFINE_int32(shard_id, -1, "this process's rank, 0..num_shards-1; -1: mpirun's "
             "OMPI_COMM_WORLD_RANK");
DEFINE_string(rendezvous, "", "where the processes meet: a folder every one of them can reach "
              "(NFS between machines, /tmp on one) or redis://HOST:PORT[/PREFIX]; a new folder or "
              "prefix for each run. Under mpirun with every rank on one machine the default is a "
              "folder in /tmp named after the job");
DEFINE_string(run_id, "", "names this run's keys in the --rendezvous store, so runs can share "
              "it (default: mpirun's job id, else none: use a new folder per run)");
DEFINE_string(gloo_interface, "", "network interface the processes talk over (eth0, lo); "
              "default: the address this machine's host name resolves to");
DEFINE_double(gloo_timeout_s, 120, "bound on every wait between processes (the rendezvous, "
              "each gradient exchange, each evaluation): a lost or stalled process makes the "
              "others stop with an error naming it within this time");
DEFINE_string(allreduce, "halving_doubling", "all-reduce algorithm: halving_doubling, "
              "ring_chunked or bcube (every process gets the same bits)");
DEFINE_double(bucket_mb, 4, "gradients are exchanged in buckets of about this many MB, each as "
              "soon as the backward pass has finished it, while the rest of backward runs");

namespace halfcaf {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

int EnvInt(const char* name) {
  const char* v = Env(name);
  try {
    size_t used = 0;
    const int n = std::stoi(v, &used);
    HALFCAF_ENFORCE(used == std::strlen(v), "");
    return n;
  } catch (...) {
    HALFCAF_THROW("the environment variable ", name, " is '", v, "', not an integer");
  }
}

// Discards what is written to it (the standard output of ranks other than 0).
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
};

}  // namespace

Shards ShardsFromFlags() {
  Shards s;
  HALFCAF_ENFORCE(FLAGS_num_shards >= 0, "--num_shards must be >= 0, got ", FLAGS_num_shards);
  const bool mpirun = Env("OMPI_COMM_WORLD_SIZE") && Env("OMPI_COMM_WORLD_RANK");
  if (FLAGS_num_shards > 0) {
    s.size = FLAGS_num_shards;
  } else if (mpirun) {
    s.size = EnvInt("OMPI_COMM_WORLD_SIZE");
  }
  if (FLAGS_shard_id >= 0) {
    s.rank = FLAGS_shard_id;
  } else if (mpirun && s.size > 1) {
    s.rank = EnvInt("OMPI_COMM_WORLD_RANK");
  } else {
    HALFCAF_ENFORCE(s.size == 1, "--num_shards ", s.size, " needs --shard_id (0..", s.size - 1,
                    ") for this process, or start the processes with mpirun");
  }
  HALFCAF_ENFORCE(s.size >= 1 && s.rank >= 0 && s.rank < s.size, "--shard_id must be in [0, ",
                  s.size, ") with ", s.size, " shard(s), got ", s.rank);
  if (s.size == 1) return s;
  HALFCAF_ENFORCE(GlooAvailable(), "--num_shards ", s.size, " (training across processes): ",
                  GlooMissingHint());
  HALFCAF_ENFORCE(std::isfinite(FLAGS_gloo_timeout_s) && FLAGS_gloo_timeout_s > 0 &&
                      FLAGS_gloo_timeout_s < 1e7,
                  "--gloo_timeout_s must be a positive number of seconds, got ",
                  FLAGS_gloo_timeout_s);
  EnforceTrainingAllreduce(FLAGS_allreduce);  // before the rendezvous: every process fails alike
  HALFCAF_ENFORCE(std::isfinite(FLAGS_bucket_mb) && FLAGS_bucket_mb > 0 && FLAGS_bucket_mb < 1e6,
                  "--bucket_mb must be positive, got ", FLAGS_bucket_mb);
  s.run_id = FLAGS_run_id;
  if (s.run_id.empty() && mpirun && Env("OMPI_MCA_ess_base_jobid")) {
    s.run_id = Env("OMPI_MCA_ess_base_jobid");
  }
  s.rendezvous = FLAGS_rendezvous;
  if (s.rendezvous.empty()) {
    const bool one_machine = mpirun && Env("OMPI_COMM_WORLD_LOCAL_SIZE") &&
                             EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE") == s.size && !s.run_id.empty();
    HALFCAF_ENFORCE(one_machine, "--num_shards ", s.size, " needs --rendezvous: a folder every "
                    "process can reach (/tmp/run1 on one machine, a shared NFS folder across "
                    "machines) or redis://HOST:PORT[/PREFIX]");
    s.rendezvous = "/tmp/halfcaf-rendezvous-" + s.run_id;
    s.temp_rendezvous = true;
  }
  return s;
}

void JoinRun(const Shards& shards, const std::string& tool, TrainerOptions* options) {
  if (shards.size <= 1) return;
  CommonWorldOptions wo;
  wo.rank = shards.rank;
  wo.size = shards.size;
  wo.timeout_ms = static_cast<int64_t>(FLAGS_gloo_timeout_s * 1000);
  wo.interface = FLAGS_gloo_interface;
  wo.name = shards.run_id.empty() ? tool : tool + "-" + shards.run_id;
  options->world = CommonWorld::Create(shards.rendezvous, wo);
  options->allreduce_algorithm = FLAGS_allreduce;
  options->bucket_bytes = std::max<int64_t>(1, static_cast<int64_t>(FLAGS_bucket_mb * (1 << 20)));
}

void RemoveTempRendezvous(const Shards& shards) {
  if (!shards.temp_rendezvous || shards.rank != 0) return;
  std::error_code ec;
  std::filesystem::remove_all(shards.rendezvous, ec);  // every process is past the rendezvous
}

void SilenceStdout() {
  static NullBuffer null_buffer;
  std::cout.rdbuf(&null_buffer);
}

}  // namespace halfcaf
