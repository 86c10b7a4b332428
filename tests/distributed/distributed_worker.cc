// One rank of a multi-process test (tests/distributed/distributed_test.cc starts several):
// creates a common world through the operators (or the C++ API), runs one scenario, checks the
// results against sums computed here, and reports through its exit status and stderr.
//
//   distributed_worker mode=allreduce rank=0 size=3 store=/tmp/x [redis=HOST:PORT]
//                      [timeout_ms=5000] [algorithm=ring] [victim=1]
// Exit 0: checked and passed; 1: a wrong result; 3: the scenario's expected failure was raised
// (its message on stderr); 4: an unexpected error.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/argument.h"
#include "core/half.h"
#include "core/math.h"
#include "core/proto_io.h"
#include "core/trace.h"
#include "core/workspace.h"
#include "distributed/common_world.h"
#include "distributed/gradient_exchange.h"
#include "models/trainer.h"

namespace halfcaf {
namespace {

std::map<std::string, std::string> g_args;

std::string Arg(const std::string& k, const std::string& def = "") {
  auto it = g_args.find(k);
  return it == g_args.end() ? def : it->second;
}
int IntArg(const std::string& k, int def) { return std::stoi(Arg(k, std::to_string(def))); }

int Fail(const std::string& what) {
  std::cerr << "rank " << Arg("rank") << ": WRONG: " << what << std::endl;
  return 1;
}

// Element i of tensor j on rank r. "exact": multiples of 1/4 in [-4, 4], whose sums are exact in
// float, in float16 (well below 2048) and in bfloat16 (at most 2 x 4 ranks x 4 = 32: 128 quarters,
// within its 8 significant bits). Otherwise values in [0.5, 1) with 10 random bits.
float Value(int r, int j, int64_t i, bool exact) {
  uint64_t h = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull ^ (r * 0x632BE59BD9B4E019ull) ^
               (j * 0x85EBCA77C2B2AE63ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  if (exact) return static_cast<float>(static_cast<int>(h % 33) - 16) / 4.0f;
  return 0.5f + static_cast<float>(h % 1024) / 2048.0f;
}

void Fill(Workspace& ws, const std::string& name, DataType dtype, int64_t count, int r, int j,
          bool exact) {
  Tensor* t = ws.CreateBlob(name)->GetMutableTensor(Device());
  t->Resize({count});
  if (dtype == DataType::FLOAT) {
    float* p = t->mutable_data<float>();
    for (int64_t i = 0; i < count; ++i) p[i] = Value(r, j, i, exact);
  } else if (dtype == DataType::FLOAT16) {
    Half* p = t->mutable_data<Half>();
    for (int64_t i = 0; i < count; ++i) p[i] = Half(Value(r, j, i, exact));
  } else {
    BFloat16* p = t->mutable_data<BFloat16>();
    for (int64_t i = 0; i < count; ++i) p[i] = BFloat16(Value(r, j, i, exact));
  }
}

float Get(const Tensor& t, int64_t i) {
  if (t.dtype() == DataType::FLOAT) return t.data<float>()[i];
  if (t.dtype() == DataType::FLOAT16) return float(t.data<Half>()[i]);
  return float(t.data<BFloat16>()[i]);
}

// Spacing of float16 (bfloat16: `bits` 8) numbers around |v| (normal range).
double HalfUlp(double v, int bits = 11) {
  int e;
  std::frexp(std::max(std::fabs(v), 6.1e-5), &e);
  return std::ldexp(1.0, e - bits);
}

OperatorDef Op(const std::string& type, const std::string& name,
               const std::vector<std::string>& in, const std::vector<std::string>& out,
               std::vector<Argument> args = {}) {
  return MakeOperatorDef(type, name, in, out, args);
}

void CreateWorld(Workspace& ws, int rank, int size) {
  NetDef init;
  init.set_name("init");
  const std::string redis = Arg("redis");
  if (!redis.empty()) {
    const size_t colon = redis.rfind(':');
    *init.add_op() = Op("RedisStoreHandlerCreate", "", {}, {"store"},
                        {MakeArgument("host", redis.substr(0, colon)),
                         MakeArgument("port", std::stoi(redis.substr(colon + 1))),
                         MakeArgument("prefix", Arg("prefix", "test/"))});
  } else {
    *init.add_op() = Op("FileStoreHandlerCreate", "", {}, {"store"},
                        {MakeArgument("path", Arg("store"))});
  }
  std::vector<Argument> args = {MakeArgument("size", size), MakeArgument("rank", rank),
                                MakeArgument("timeout_ms", IntArg("timeout_ms", 10000)),
                                MakeArgument("interface", "lo")};
  OperatorDef cw = Op("CreateCommonWorld", "cw", {"store"}, {"cw"}, args);
  cw.set_engine("GLOO");
  *init.add_op() = cw;
  ws.RunNetOnce(init);
}

// Every count and dtype, n = 2 tensors per op, twice per op (the second run reuses the cached
// algorithm on refilled tensors).
int Allreduce(Workspace& ws, int rank, int size) {
  const int n = 2;
  for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{1000003}}) {
    for (DataType dtype : {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16}) {
      for (bool exact : {true, false}) {
        if (dtype == DataType::FLOAT && !exact) continue;  // float sums are order-dependent
        const std::string tag = MakeString(count, "_", DataTypeName(dtype), exact ? "_exact" : "");
        std::vector<std::string> blobs = {"cw"};
        for (int j = 0; j < n; ++j) blobs.push_back("x" + std::to_string(j) + "_" + tag);
        NetDef net;
        net.set_name("allreduce_" + tag);
        OperatorDef op = Op("Allreduce", "ar_" + tag, blobs,
                            std::vector<std::string>(blobs.begin() + 1, blobs.end()),
                            {MakeArgument("algorithm", Arg("algorithm", "halving_doubling"))});
        op.set_engine("GLOO");
        *net.add_op() = op;
        for (int run = 0; run < 2; ++run) {
          for (int j = 0; j < n; ++j) Fill(ws, blobs[j + 1], dtype, count, rank, j, exact);
          if (run == 0) ws.CreateNet(net);
          ws.RunNet(net.name());
          for (int j = 0; j < n; ++j) {
            const Tensor& y = ws.GetBlob(blobs[j + 1])->GetTensor();
            for (int64_t i = 0; i < count; ++i) {
              double sum = 0;
              for (int r = 0; r < size; ++r) {
                for (int k = 0; k < n; ++k) sum += Value(r, k, i, exact);
              }
              const double got = Get(y, i);
              // float16 / bfloat16: n*size-1 additions, each rounding to half an ulp of a
              // partial sum no larger than the total (positive values).
              const int bits = dtype == DataType::BFLOAT16 ? 8 : 11;
              const double tol = exact ? 0.0 : (n * size) * 0.5 * HalfUlp(sum, bits);
              if (std::fabs(got - sum) > tol) {
                return Fail(MakeString("Allreduce ", tag, " run ", run, " tensor ", j, " [", i,
                                       "] = ", got, ", expected ", sum, " (tolerance ", tol,
                                       ")"));
              }
            }
          }
        }
        // The same bits on every rank: print a checksum of x0 for the test to compare.
        const Tensor& y = ws.GetBlob(blobs[1])->GetTensor();
        uint64_t h = 1469598103934665603ull;
        const auto* bytes = static_cast<const uint8_t*>(y.raw_data());
        for (size_t b = 0; b < y.nbytes(); ++b) h = (h ^ bytes[b]) * 1099511628211ull;
        std::cout << "checksum " << tag << " " << h << std::endl;
      }
    }
  }
  return 0;
}

int Broadcast(Workspace& ws, int rank, int size) {
  for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{1000003}}) {
    for (DataType dtype : {DataType::FLOAT, DataType::FLOAT16}) {
      for (int root = 0; root < size; ++root) {
        const std::string tag = MakeString(count, "_", DataTypeName(dtype), "_root", root);
        const std::vector<std::string> xs = {"b0_" + tag, "b1_" + tag};
        for (int j = 0; j < 2; ++j) Fill(ws, xs[j], dtype, count, rank, j, false);
        OperatorDef op = Op("Broadcast", "bc_" + tag, {"cw", xs[0], xs[1]}, xs,
                            {MakeArgument("root", root)});
        op.set_engine("GLOO");
        NetDef net;
        net.set_name("broadcast_" + tag);
        *net.add_op() = op;
        ws.RunNetOnce(net);
        for (int j = 0; j < 2; ++j) {
          const Tensor& y = ws.GetBlob(xs[j])->GetTensor();
          for (int64_t i = 0; i < count; ++i) {
            float want = Value(root, 0, i, false);
            if (dtype == DataType::FLOAT16) want = float(Half(want));
            if (Get(y, i) != want) {
              return Fail(MakeString("Broadcast ", tag, " tensor ", j, " [", i, "] = ", Get(y, i),
                                     ", expected ", want));
            }
          }
        }
      }
    }
  }
  return 0;
}

// Rank 0 arrives 400 ms late: everyone else must wait for it at each barrier.
int Barrier(Workspace& ws, int rank, int size) {
  NetDef net;
  net.set_name("barrier");
  OperatorDef op = Op("Barrier", "barrier", {"cw"}, {});
  op.set_engine("GLOO");
  *net.add_op() = op;
  ws.CreateNet(net);
  for (int round = 0; round < 3; ++round) {
    ws.RunNet("barrier");  // line everyone up
    const auto start = std::chrono::steady_clock::now();
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ws.RunNet("barrier");
    const double waited = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start).count();
    if (waited < 350) return Fail(MakeString("barrier round ", round, " returned after ", waited,
                                             " ms, before rank 0 arrived (400 ms)"));
  }
  // The last barrier's messages may still be in flight to a rank when another leaves it (a rank
  // that exits closes its connections): leave together, through files beside the store.
  const std::string done = Arg("store") + ".done";
  std::ofstream(done + std::to_string(rank)) << "done";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int r = 0; r < size; ++r) {
    while (!std::ifstream(done + std::to_string(r)).good()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail(MakeString("rank ", r, " did not finish its barriers within 20 s"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return 0;
}

// The victim dies by SIGKILL in the middle of the third all-reduce; the others must fail.
int Killed(Workspace& ws, int rank, int size, bool with_status) {
  Fill(ws, "g", DataType::FLOAT16, 1 << 20, rank, 0, true);
  NetDef net;
  net.set_name("step");
  std::vector<Argument> args;
  if (with_status) args.push_back(MakeArgument("status_blob", "ar_status"));
  OperatorDef op = Op("Allreduce", "grad_allreduce", {"cw", "g"}, {"g"}, args);
  op.set_engine("GLOO");
  *net.add_op() = op;
  ws.CreateNet(net);
  const int victim = IntArg("victim", size - 1);
  for (int step = 0; step < 1000; ++step) {
    if (step == 3 && rank == victim) raise(SIGKILL);
    ws.RunNet("step");
    if (with_status && ws.GetBlob("ar_status")->IsTensor()) {
      std::cerr << "status_blob ar_status = "
                << ws.GetBlob("ar_status")->GetTensor().data<int32_t>()[0] << " at step " << step
                << std::endl;
      return 3;
    }
  }
  return Fail("the all-reduce went on without the killed rank");
}

// The C++ API the trainer uses: spec rendezvous, Allreducer, Broadcaster, Barrier, Clone,
// Allgather.
int Api(int rank, int size) {
  CommonWorldOptions o;
  o.rank = rank;
  o.size = size;
  o.timeout_ms = IntArg("timeout_ms", 10000);
  o.interface = "lo";
  o.name = "api";
  const std::string spec = Arg("redis").empty() ? Arg("store") : "redis://" + Arg("redis") + "/api";
  auto world = CommonWorld::Create(spec, o);
  auto clone = world->Clone();
  Tensor a(std::vector<int64_t>{5}, DataType::FLOAT);
  Tensor b(std::vector<int64_t>{5}, DataType::FLOAT16);
  for (int i = 0; i < 5; ++i) {
    a.mutable_data<float>()[i] = static_cast<float>(rank + i);
    b.mutable_data<Half>()[i] = Half(static_cast<float>(rank * i));
  }
  Allreducer(world, AllreduceAlgorithm::kRingChunked).Run({&a});
  Allreducer(clone).Run({&b});
  for (int i = 0; i < 5; ++i) {
    const float want_a = static_cast<float>(size * (size - 1) / 2 + size * i);
    const float want_b = static_cast<float>(i * size * (size - 1) / 2);
    if (a.data<float>()[i] != want_a || float(b.data<Half>()[i]) != want_b) {
      return Fail(MakeString("api allreduce [", i, "] = ", a.data<float>()[i], ", ",
                             float(b.data<Half>()[i]), "; expected ", want_a, ", ", want_b));
    }
  }
  Broadcaster(world).Run({&a}, size - 1);
  world->Barrier();
  std::vector<int32_t> mine = {rank, rank * 10}, all(2 * size);
  Allgatherer(clone).Run({&mine[0], &mine[1]}, sizeof(int32_t), all.data());
  for (int r = 0; r < size; ++r) {
    if (all[2 * r] != r || all[2 * r + 1] != r * 10) return Fail("api allgather");
  }
  world->Close();
  return 0;
}

// GradientExchange, as the trainer drives it: three buckets (float, float16, float with tensors of
// several sizes) started one after the other, several steps, each bucket's tensors summed over
// the ranks. With victim=R, rank R dies at step 2 (kill -9).
int Exchange(int rank, int size) {
  CommonWorldOptions o;
  o.rank = rank;
  o.size = size;
  o.timeout_ms = IntArg("timeout_ms", 10000);
  o.interface = "lo";
  o.name = "exchange";
  auto world = CommonWorld::Create(Arg("store"), o);
  TraceRecorder trace;  // the exchanges show in traces: one span per bucket, on their own track
  trace.Start();
  GradientExchange exchange(world);
  const int victim = IntArg("victim", -1);
  const std::vector<std::vector<int64_t>> sizes = {{7, 1000003}, {1, 4097}, {3, 1, 20000}};
  const std::vector<DataType> dtypes = {DataType::FLOAT, DataType::FLOAT16, DataType::FLOAT};
  for (int step = 0; step < 4; ++step) {
    if (step == 2 && rank == victim) raise(SIGKILL);
    std::vector<std::vector<Tensor>> buckets(sizes.size());
    for (size_t b = 0; b < sizes.size(); ++b) {
      for (size_t j = 0; j < sizes[b].size(); ++j) {
        buckets[b].emplace_back(std::vector<int64_t>{sizes[b][j]}, dtypes[b]);
        Tensor& t = buckets[b].back();
        for (int64_t i = 0; i < t.numel(); ++i) {
          const float v = Value(rank, static_cast<int>(10 * b + j + step), i, true);
          if (dtypes[b] == DataType::FLOAT) t.mutable_data<float>()[i] = v;
          else t.mutable_data<Half>()[i] = Half(v);
        }
      }
      std::vector<Tensor*> ptrs;
      for (Tensor& t : buckets[b]) ptrs.push_back(&t);
      exchange.Start(ptrs);
    }
    exchange.Wait();
    for (size_t b = 0; b < sizes.size(); ++b) {
      for (size_t j = 0; j < sizes[b].size(); ++j) {
        const Tensor& t = buckets[b][j];
        for (int64_t i = 0; i < t.numel(); ++i) {
          float want = 0;
          for (int r = 0; r < size; ++r) want += Value(r, static_cast<int>(10 * b + j + step), i, true);
          if (Get(t, i) != want) {
            return Fail(MakeString("exchange step ", step, " bucket ", b, " tensor ", j, " [", i,
                                   "] = ", Get(t, i), ", expected ", want));
          }
        }
      }
    }
  }
  const ExchangeTimes times = exchange.TakeTimes();
  int64_t want_bytes = 0;
  for (size_t b = 0; b < sizes.size(); ++b) {
    for (int64_t n : sizes[b]) want_bytes += 4 * n * static_cast<int64_t>(DataTypeSize(dtypes[b]));
  }
  if (times.buckets != 12 || times.bytes != want_bytes || times.exchange_s <= 0 ||
      times.exposed_s < 0) {
    return Fail(MakeString("exchange times: ", times.buckets, " buckets, ", times.bytes,
                           " bytes (expected 12, ", want_bytes, "), ", times.exchange_s, " s"));
  }
  trace.Stop();
  const std::vector<std::string> tracks = trace.track_names();
  int spans = 0;
  for (const auto& e : trace.events()) {
    if (std::string(e.category) != "collective") continue;
    const int64_t bucket = std::stoll(e.name.substr(e.name.rfind(' ') + 1));
    int64_t bytes = 0;
    const int64_t elem = static_cast<int64_t>(DataTypeSize(dtypes[bucket]));
    for (int64_t n : sizes.at(bucket)) bytes += n * elem;
    if (e.name.rfind("allreduce bucket ", 0) != 0 ||
        tracks.at(e.track) != "gradient exchange (Gloo)" || e.args.at(0).first != "bytes" ||
        e.args.at(0).second != std::to_string(bytes)) {
      return Fail(MakeString("trace: event '", e.name, "' on track '", tracks.at(e.track), "'"));
    }
    ++spans;
  }
  if (spans != 12) return Fail(MakeString("trace: ", spans, " exchange spans, expected 12"));
  return 0;
}

// dropout=<ratio>: LeNet's fc3 activations go through a Dropout before the classifier reads them.
void InsertDropoutAfterFc3(float ratio, NetDef* net) {
  NetDef out = *net;
  out.clear_op();
  bool done = false;
  for (const auto& op : net->op()) {
    OperatorDef copy = op;
    if (done && copy.input_size() > 0 && copy.input(0) == "fc3") copy.set_input(0, "fc3_dropped");
    *out.add_op() = copy;
    if (!done && op.type() == "Relu" && op.output(0) == "fc3") {
      *out.add_op() = MakeOperatorDef("Dropout", "", {"fc3"}, {"fc3_dropped", "fc3_mask"},
                                      {MakeArgument("ratio", ratio)});
      done = true;
    }
  }
  if (!done) throw std::runtime_error("dropout=: the net has no Relu writing fc3 (LeNet's)");
  *net = out;
}

// The trainer across processes (size > 1) or in one (size 1, no world): net= init= (LeNet),
// synthetic data, `iters` steps with the loss of each printed ("loss <iter> <value>"), then the
// state saved to ckpt=<prefix><rank>.pb. dtype=float|float16, replicas=N (CPU replicas in this
// process), batch=64, bucket_bytes (small: several buckets), dropout=<ratio> (above).
int Train(int rank, int size) {
  math::SetBlasThreads(1);
  NetDef init, forward;
  ReadProtoFromFile(Arg("init"), &init);
  ReadProtoFromFile(Arg("net"), &forward);
  if (!Arg("dropout").empty()) InsertDropoutAfterFc3(std::stof(Arg("dropout")), &forward);
  TrainerOptions o;
  o.data_format = "synthetic";
  o.synthetic_shape = {1, 28, 28};
  o.synthetic_count = 512;
  o.batch_size = IntArg("batch", 64);
  o.prefetch = false;
  o.optimizer.base_lr = 0.01f;
  o.optimizer.momentum = 0.9f;
  o.precision = DataTypeFromName(Arg("dtype", "float"));
  o.dynamic_loss_scale = o.precision == DataType::FLOAT16;
  o.loss_scale = o.dynamic_loss_scale ? 1024.f : 1.f;
  const int replicas = IntArg("replicas", 1);
  if (replicas > 1) o.replicas.assign(static_cast<size_t>(replicas), Device());
  o.bucket_bytes = IntArg("bucket_bytes", 64 << 10);
  if (size > 1) {
    CommonWorldOptions w;
    w.rank = rank;
    w.size = size;
    w.timeout_ms = IntArg("timeout_ms", 20000);
    w.interface = "lo";
    w.name = "train";
    o.world = CommonWorld::Create(Arg("store"), w);
  }
  Trainer trainer(init, forward, o);
  trainer.Initialize();
  const int iters = IntArg("iters", 20);
  for (int i = 0; i < iters; ++i) {
    trainer.Step();
    const StepStats s = trainer.ReadStats();
    std::printf("loss %d %.9g\n", i, s.loss);
  }
  if (!Arg("ckpt").empty()) trainer.SaveCheckpoint(Arg("ckpt") + std::to_string(rank) + ".pb");
  return 0;
}

int Main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    g_args[a.substr(0, eq)] = eq == std::string::npos ? "" : a.substr(eq + 1);
  }
  const std::string mode = Arg("mode");
  const int rank = IntArg("rank", 0), size = IntArg("size", 1);
  try {
    if (mode == "api") return Api(rank, size);
    if (mode == "exchange") return Exchange(rank, size);
    if (mode == "train") return Train(rank, size);
    Workspace ws;
    CreateWorld(ws, rank, size);
    if (mode == "allreduce") return Allreduce(ws, rank, size);
    if (mode == "broadcast") return Broadcast(ws, rank, size);
    if (mode == "barrier") return Barrier(ws, rank, size);
    if (mode == "killed") return Killed(ws, rank, size, false);
    if (mode == "killed_status") return Killed(ws, rank, size, true);
    if (mode == "rendezvous") return 0;
    std::cerr << "unknown mode " << mode << std::endl;
    return 4;
  } catch (const CommunicationError& e) {
    std::cerr << "CommunicationError: " << e.what() << std::endl;
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 4;
  }
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) { return halfcaf::Main(argc, argv); }
