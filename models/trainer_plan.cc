// Trainer::TrainingPlan: the training run as one PlanDef (init, the training loop with its test
// evaluations), which run_plan executes exactly as Trainer::Step and Evaluate would.
#include <filesystem>

#include <glog/logging.h>

#include "core/argument.h"
#include "core/enforce.h"
#include "data/reader_state.h"
#include "models/trainer.h"
#include "models/trainer_util.h"

namespace halfcaf {

namespace {

// DataInput sources made absolute, so the plan runs from any directory.
void AbsoluteSources(NetDef* net) {
  for (auto& op : *net->mutable_op()) {
    if (op.type() != "DataInput") continue;
    for (auto& arg : *op.mutable_arg()) {
      if (arg.name() == "source" && arg.has_s() && !arg.s().empty()) {
        arg.set_s(std::filesystem::absolute(arg.s()).lexically_normal().string());
      }
    }
  }
}

ExecutionStep* AddStep(ExecutionStep* parent, PlanDef* plan, const std::string& name,
                       const std::vector<std::string>& nets, int64_t num_iter) {
  ExecutionStep* s = parent ? parent->add_substep() : plan->add_execution_step();
  s->set_name(name);
  for (const auto& n : nets) s->add_network(n);
  if (num_iter != 1) s->set_num_iter(num_iter);
  return s;
}

}  // namespace

PlanDef Trainer::TrainingPlan(int64_t iterations, int64_t test_every) {
  HALFCAF_ENFORCE(train_net_ != nullptr, "call Initialize before TrainingPlan");
  HALFCAF_ENFORCE(!opt_.world, "a training plan runs in one process: the multi-process gradient "
                  "exchange is not an operator a plan can hold");
  HALFCAF_ENFORCE(iterations > 0, "a training plan needs a positive number of iterations, got ",
                  iterations);
  HALFCAF_ENFORCE(test_every >= 0, "test_every must not be negative, got ", test_every);
  PlanDef plan;
  plan.set_name("training");
  NetDef* init = plan.add_network();
  *init = init_;
  init->set_name("train_init");
  NetDef* train = plan.add_network();
  *train = train_;
  AbsoluteSources(train);
  const bool has_test = !opt_.test_data.empty() || opt_.data_format == "synthetic";
  if (has_test && !test_net_) CreateTestNet();
  if (has_test && test_reader_->num_samples() % test_reader_->batch_size() != 0) {
    LOG(WARNING) << "the plan's evaluations read " << test_batches_ << " batches of "
                 << test_reader_->batch_size() << " from the " << test_reader_->num_samples()
                 << " test samples in turn, so each one after the first starts where the "
                    "previous stopped (train_net starts every evaluation at the first sample)";
  }
  if (has_test) {
    NetDef* test = plan.add_network();
    *test = test_;
    AbsoluteSources(test);
    // The sums over the test batches and their means, on the device the test net uses.
    NetDef* start = plan.add_network();
    NetDef* add = plan.add_network();
    NetDef* mean = plan.add_network();
    start->set_name("test_sum_start");
    add->set_name("test_sum_add");
    mean->set_name("test_mean");
    std::vector<std::string> values{opt_.loss_blob};
    if (NetWrites(test_, TestBlob(opt_.accuracy_blob))) values.push_back(opt_.accuracy_blob);
    DeviceOption where;
    where.set_device_type(static_cast<int>(opt_.device.type));
    where.set_device_id(opt_.device.id);
    for (const auto& v : values) {
      const std::string value = TestBlob(v), sum = "test/" + v + "_sum", out = "test/" + v;
      OperatorDef ops[3] = {
          MakeOperatorDef("Copy", "", {value}, {sum}),
          MakeOperatorDef("Sum", "", {sum, value}, {sum}),
          MakeOperatorDef("Scale", "", {sum}, {out},
                          {MakeArgument("scale", 1.f / static_cast<float>(test_batches_))})};
      NetDef* nets[3] = {start, add, mean};
      for (int k = 0; k < 3; ++k) {
        *ops[k].mutable_device_option() = where;
        *nets[k]->add_op() = ops[k];
      }
    }
  }
  AddStep(nullptr, &plan, "init", {"train_init"}, 1);
  // One evaluation: the first batch starts the sums, the others add to them.
  auto add_test = [&](ExecutionStep* parent, const std::string& name) {
    ExecutionStep* t = AddStep(parent, &plan, name, {}, 1);
    AddStep(t, &plan, "test_first_batch", {"test", "test_sum_start"}, 1);
    if (test_batches_ > 1) AddStep(t, &plan, "test_batches", {"test", "test_sum_add"}, test_batches_ - 1);
    AddStep(t, &plan, "test_mean", {"test_mean"}, 1);
  };
  const int64_t every = has_test && test_every > 0 ? std::min(test_every, iterations) : iterations;
  const int64_t rounds = iterations / every, rest = iterations % every;
  ExecutionStep* loop = AddStep(nullptr, &plan, "train_and_test", {}, rounds);
  AddStep(loop, &plan, "train", {"train"}, every);
  if (has_test) add_test(loop, "test");
  if (rest > 0) {
    ExecutionStep* last = AddStep(nullptr, &plan, "train_rest_and_test", {}, 1);
    AddStep(last, &plan, "train_rest", {"train"}, rest);
    if (has_test) add_test(last, "final_test");
  }
  return plan;
}

}  // namespace halfcaf
