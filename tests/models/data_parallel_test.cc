#include "models/data_parallel.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "core/argument.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

std::vector<Device> Cpus(int n) { return std::vector<Device>(n, Device{}); }

TEST(DataParallelTest, ReplicasArePrefixedPerIndex) {
  auto r = MakeReplicas(Cpus(3));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[2].prefix, "cpu_2");
  EXPECT_EQ(r[1].Blob("conv1_w"), "cpu_1/conv1_w");
  auto g = MakeReplicas({Device{DeviceType::CUDA, 1}, Device{DeviceType::CUDA, 1}});
  EXPECT_EQ(g[0].prefix, "gpu_0");
  EXPECT_EQ(g[1].prefix, "gpu_1");  // two replicas on GPU 1: names by replica, not device
  EXPECT_EQ(g[1].device.id, 1);
}

TEST(DataParallelTest, BadReplicaListsAreRejected) {
  try {
    MakeReplicas({});
    FAIL() << "empty list accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("at least one device"), std::string::npos) << e.what();
  }
  try {
    MakeReplicas({Device{}, Device{DeviceType::CUDA, 0}});
    FAIL() << "mixed device types accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("one device type"), std::string::npos) << e.what();
  }
}

TEST(DataParallelTest, ReplicateNetRenamesAndPlaces) {
  NetDef net;
  net.set_name("train");
  net.add_external_input("data");
  *net.add_op() = MakeOperatorDef("FC", "fc1", {"data", "w", "b"}, {"y"});
  *net.add_op() = MakeOperatorDef("Iter", "", {"iter"}, {"iter"});
  Replica r{Device{DeviceType::CUDA, 3}, "gpu_1"};
  NetDef out = ReplicateNet(net, r, [](const OperatorDef& op) { return op.type() == "Iter"; },
                            {"data"});
  EXPECT_EQ(out.name(), "gpu_1/train");
  EXPECT_EQ(out.external_input(0), "data");  // shared
  const OperatorDef& fc = out.op(0);
  EXPECT_EQ(fc.name(), "gpu_1/fc1");
  EXPECT_EQ(fc.input(0), "data");
  EXPECT_EQ(fc.input(1), "gpu_1/w");
  EXPECT_EQ(fc.output(0), "gpu_1/y");
  EXPECT_EQ(fc.device_option().device_type(), static_cast<int>(DeviceType::CUDA));
  EXPECT_EQ(fc.device_option().device_id(), 3);
  EXPECT_EQ(out.op(1).input(0), "gpu_1/iter");
  EXPECT_EQ(out.op(1).device_option().device_type(), static_cast<int>(DeviceType::CPU));
}

// Every replica ends with the sum over replicas, for any replica count (trees that are not
// complete included), in float and float16.
TEST(DataParallelTest, AllReduceSumsOverAnyNumberOfReplicas) {
  for (int n = 1; n <= 6; ++n) {
    for (DataType dtype : {DataType::FLOAT, DataType::FLOAT16}) {
      auto replicas = MakeReplicas(Cpus(n));
      Workspace ws;
      std::vector<std::vector<float>> want(2);
      const std::vector<std::vector<int64_t>> dims{{3, 5}, {7}};
      for (int b = 0; b < 2; ++b) {
        want[b].assign(dims[b][0] * (b == 0 ? dims[b][1] : 1), 0.f);
        for (int i = 0; i < n; ++i) {
          Tensor t = RandomTensor(dims[b], 100 * b + i);
          if (dtype == DataType::FLOAT16) t = ToHalf(t);
          std::vector<float> v = ToFloatVector(t);
          for (size_t k = 0; k < v.size(); ++k) want[b][k] += v[k];
          SetInput(&ws, replicas[i].Blob("g" + std::to_string(b)), t);
        }
      }
      NetDef net;
      AddAllReduce({"g0", "g1"}, replicas, &net);
      // Two ops (Copy + Sum) per merge and one Copy per broadcast: 3 (n - 1) per blob.
      EXPECT_EQ(net.op_size(), 2 * 3 * (n - 1)) << n;
      ws.RunNetOnce(net);
      // FP16: every partial sum is rounded to half once.
      const float tol = dtype == DataType::FLOAT ? 1e-5f : 3e-3f * n;
      for (int i = 0; i < n; ++i) {
        for (int b = 0; b < 2; ++b) {
          const Tensor& got = ws.GetTensor(replicas[i].Blob("g" + std::to_string(b)));
          EXPECT_EQ(got.dtype(), dtype);
          EXPECT_EQ(got.dims(), dims[b]);
          ExpectNear(ToFloatVector(got), want[b], tol, tol);
        }
      }
    }
  }
}

// ---- training: N replicas on batch B (B / N each) follow the same path as one replica on B.

TrainerOptions TinyOptions(int replicas, bool float16, int64_t batch) {
  return TinyTrainingOptions(float16, batch, Device(), Cpus(replicas));
}

TEST(DataParallelTest, ReplicasTrainLikeOneDeviceOnTheWholeBatch) {
  const TinyTrainingRun one = TrainTiny(TinyOptions(1, false, 12), 40);
  for (int n : {2, 3, 4}) {
    TrainerOptions o = TinyOptions(n, false, 12);
    const TinyTrainingRun many = TrainTiny(o, 40);
    ASSERT_EQ(many.losses.size(), one.losses.size());
    ExpectNear(many.losses, one.losses, 1e-5f, 1e-4f);
    ExpectNear(many.fc_w, one.fc_w, 1e-5f, 1e-4f);
    EXPECT_NEAR(many.test_loss, one.test_loss, 1e-4 * one.test_loss);
  }
  // The run did move: the check above is not between two untouched nets.
  auto mean = [](const std::vector<float>& v, size_t from, size_t to) {
    double s = 0;
    for (size_t i = from; i < to; ++i) s += v[i];
    return s / static_cast<double>(to - from);
  };
  EXPECT_LT(mean(one.losses, 30, 40), 0.7 * mean(one.losses, 0, 10));
}

TEST(DataParallelTest, ReplicasAgreeAfterTraining) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  for (bool fp16 : {false, true}) {
    Trainer t(init, fwd, TinyOptions(3, fp16, 12));
    t.Initialize();
    for (int i = 0; i < 5; ++i) t.Step();
    for (const char* blob : {"conv1_w", "fc_b", "fc_w_momentum"}) {
      const auto r0 = ToFloatVector(t.workspace()->GetTensor(t.replicas()[0].Blob(blob)));
      for (int r = 1; r < 3; ++r) {
        // Same summed gradient, same update: bitwise equal.
        EXPECT_EQ(ToFloatVector(t.workspace()->GetTensor(t.replicas()[r].Blob(blob))), r0)
            << blob << " replica " << r << (fp16 ? " fp16" : " fp32");
      }
    }
  }
}

// A Dropout in the net draws its own masks on each replica: the seed the trainer gives it before
// the passes is mixed with the replica's index.
TEST(DataParallelTest, ReplicasDrawTheirOwnDropoutMasks) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  NetDef with_dropout = fwd;
  with_dropout.clear_op();
  for (const auto& op : fwd.op()) {
    *with_dropout.add_op() = op;
    if (op.type() == "Relu") {
      *with_dropout.add_op() = MakeOperatorDef("Dropout", "", {"conv1"}, {"conv1", "conv1_mask"},
                                               {MakeArgument("ratio", 0.5f)});
    }
  }
  TrainerOptions o = TinyOptions(2, false, 12);
  o.optimize_memory = false;  // the masks under their own names,
  o.blocked_layout = "off";   // in NCHW (with blocks of 8 the convolution takes the layout)
  Trainer t(init, with_dropout, o);
  t.Initialize();
  t.Step();
  std::vector<uint32_t> seeds;
  for (const auto& op : t.train_net().op()) {
    if (op.type() == "Dropout") seeds.push_back(op.device_option().random_seed());
  }
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_NE(seeds[0], seeds[1]);
  auto mask = [&](int r) {
    const Tensor& m = t.workspace()->GetTensor(t.replicas()[r].Blob("conv1_mask"));
    return std::vector<bool>(m.data<bool>(), m.data<bool>() + m.numel());
  };
  EXPECT_NE(mask(0), mask(1));
}

TEST(DataParallelTest, MixedPrecisionReplicasFollowOneDevice) {
  const TinyTrainingRun one = TrainTiny(TinyOptions(1, true, 16), 15);
  const TinyTrainingRun two = TrainTiny(TinyOptions(2, true, 16), 15);
  // FP16 gradients of half batches, summed in FP16, vs FP16 gradients of the whole batch.
  ExpectNear(two.losses, one.losses, 2e-3f, 1e-2f);
  ExpectNear(two.fc_w, one.fc_w, 2e-3f, 1e-2f);
  // BF16 gradients summed in BF16 (8 significant bits): the same path within BF16's precision.
  const TinyTrainingRun one_bf16 =
      TrainTiny(TinyTrainingOptions(DataType::BFLOAT16, 16, Device(), Cpus(1)), 15);
  const TinyTrainingRun two_bf16 =
      TrainTiny(TinyTrainingOptions(DataType::BFLOAT16, 16, Device(), Cpus(2)), 15);
  ExpectNear(two_bf16.losses, one_bf16.losses, 1e-2f, 4e-2f);
  ExpectNear(two_bf16.fc_w, one_bf16.fc_w, 1e-2f, 4e-2f);
}

// The dag executor (the default for replicas on several GPUs) runs the replicas' chains
// concurrently; their ops and the all-reduce tree are ordered by their blobs, so the run is
// bitwise the one the simple executor gives, in FP32 and in mixed precision.
TEST(DataParallelTest, DagExecutorGivesTheSimpleNetsRun) {
  for (bool fp16 : {false, true}) {
    for (int n : {2, 3}) {
      TrainerOptions o = TinyOptions(n, fp16, 12);
      o.net_type = "simple";
      const TinyTrainingRun simple = TrainTiny(o, 12);
      o.net_type = "dag";
      const TinyTrainingRun dag = TrainTiny(o, 12);
      EXPECT_EQ(dag.losses, simple.losses) << n << " replicas" << (fp16 ? " fp16" : "");
      EXPECT_EQ(dag.fc_w, simple.fc_w) << n << " replicas" << (fp16 ? " fp16" : "");
    }
  }
  TrainerOptions bad = TinyOptions(2, false, 12);
  bad.net_type = "async";
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  try {
    Trainer t(init, fwd, bad);
    t.Initialize();
    ADD_FAILURE() << "net type 'async' was accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("must be simple or dag, got 'async'"), std::string::npos)
        << e.what();
  }
}

// A checkpoint holds replica 0's state under single-device names: it resumes with another
// replica count and continues the same run.
TEST(DataParallelTest, CheckpointsMoveBetweenReplicaCounts) {
  const std::string ck = ::testing::TempDir() + "/dp_checkpoint.pb";
  const TinyTrainingRun straight = TrainTiny(TinyOptions(2, false, 12), 12);
  TrainTiny(TinyOptions(2, false, 12), 6, ck);
  for (int n : {1, 3}) {
    const TinyTrainingRun resumed = TrainTiny(TinyOptions(n, false, 12), 12, "", ck);
    ASSERT_EQ(resumed.losses.size(), 6u);
    ExpectNear(resumed.losses,
               std::vector<float>(straight.losses.begin() + 6, straight.losses.end()), 1e-5f,
               1e-4f);
    ExpectNear(resumed.fc_w, straight.fc_w, 1e-5f, 1e-4f);
  }
  std::remove(ck.c_str());
}

TEST(DataParallelTest, BatchMustSplitEvenly) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  try {
    Trainer t(init, fwd, TinyOptions(3, false, 16));
    FAIL() << "batch 16 split in 3 accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of the number of replicas (3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
