#include "models/acgan.h"

#include "core/argument.h"
#include "core/enforce.h"

namespace halfcaf {

const char kAcGanData[] = "data";
const char kAcGanLabel[] = "label";
const char kAcGanDLoss[] = "d_loss";
const char kAcGanGLoss[] = "g_loss";
const char kAcGanDAccuracy[] = "d_accuracy";
const char kAcGanSampleNoise[] = "sample_noise";
const char kAcGanSampleLabel[] = "sample_label";
const char kAcGanSample[] = "sample";

namespace {

constexpr int64_t kGenChannels = 128, kGenMid = 64, kDiscMid = 64, kDiscChannels = 128;
constexpr int64_t kSeed = 7;  // the generator's first feature map is kSeed x kSeed
constexpr int64_t kFeatures = kDiscChannels * kSeed * kSeed;

OperatorDef* Add(NetDef* net, const std::string& type, const std::vector<std::string>& in,
                 const std::vector<std::string>& out, const std::vector<Argument>& args = {}) {
  OperatorDef* op = net->add_op();
  *op = MakeOperatorDef(type, "", in, out, args);
  return op;
}

// Parameters: their fill ops in the init net, and the list of one network's.
struct Params {
  NetDef* init;
  std::vector<std::string>* names;

  void Gaussian(const std::string& name, const std::vector<int64_t>& shape, float std) {
    Add(init, "GaussianFill", {}, {name},
        {MakeArgument("shape", shape), MakeArgument("mean", 0.f), MakeArgument("std", std)});
    names->push_back(name);
  }
  void Constant(const std::string& name, int64_t n, float value) {
    Add(init, "ConstantFill", {}, {name},
        {MakeArgument("shape", std::vector<int64_t>{n}), MakeArgument("value", value)});
    names->push_back(name);
  }
  void BatchNorm(const std::string& name, int64_t channels) {
    Constant(name + "_s", channels, 1.f);
    Constant(name + "_b", channels, 0.f);
    Constant(name + "_rm", channels, 0.f);
    Constant(name + "_riv", channels, 1.f);
  }
};

// SpatialBN `bn` (PyTorch's momentum and running variance) from `in` to `out`.
void BatchNorm(NetDef* net, const std::string& bn, const std::string& in, const std::string& out,
               bool is_test) {
  std::vector<std::string> outputs{out};
  if (!is_test) outputs.insert(outputs.end(), {bn + "_rm", bn + "_riv", out + "_sm", out + "_siv"});
  Add(net, "SpatialBN", {in, bn + "_s", bn + "_b", bn + "_rm", bn + "_riv"}, outputs,
      {MakeArgument("is_test", is_test ? 1 : 0), MakeArgument("epsilon", 1e-5f),
       MakeArgument("momentum", 0.9f), MakeArgument("unbiased_running_var", 1)});
}

std::vector<Argument> Stride2Kernel4() {
  return {MakeArgument("kernel", 4), MakeArgument("stride", 2), MakeArgument("pad", 1)};
}

// The generator on `noise` and `label`; activations named `tag`/...; returns the image blob.
std::string Generator(NetDef* net, const AcGanOptions& o, const std::string& tag,
                      const std::string& noise, const std::string& label, bool is_test) {
  const std::string p = tag + "/";
  Add(net, "Gather", {"g_embed_w", label}, {p + "g_embed"}, {MakeArgument("dense_gradient", 1)});
  Add(net, "Mul", {noise, p + "g_embed"}, {p + "g_h0"});
  Add(net, "FC", {p + "g_h0", "g_fc_w", "g_fc_b"}, {p + "g_fc"});
  Add(net, "Reshape", {p + "g_fc"}, {p + "g_fc_map", p + "g_fc_shape"},
      {MakeArgument("shape", std::vector<int64_t>{-1, kGenChannels, kSeed, kSeed})});
  BatchNorm(net, "g_bn0", p + "g_fc_map", p + "g_bn0", is_test);
  Add(net, "Relu", {p + "g_bn0"}, {p + "g_bn0"});
  Add(net, "ConvTranspose", {p + "g_bn0", "g_deconv1_w"}, {p + "g_deconv1"}, Stride2Kernel4());
  BatchNorm(net, "g_bn1", p + "g_deconv1", p + "g_bn1", is_test);
  Add(net, "Relu", {p + "g_bn1"}, {p + "g_bn1"});
  Add(net, "ConvTranspose", {p + "g_bn1", "g_deconv2_w", "g_deconv2_b"}, {p + "g_deconv2"},
      Stride2Kernel4());
  Add(net, "Tanh", {p + "g_deconv2"}, {p + "fake"});
  return p + "fake";
}

struct Heads {
  std::string adv, cls;
};

// The discriminator on `images`; activations named `tag`/...
Heads Discriminator(NetDef* net, const AcGanOptions& o, const std::string& tag,
                    const std::string& images) {
  const std::string p = tag + "/";
  auto dropout = [&](const std::string& x, const std::string& name) {
    if (o.dropout <= 0.f) return x;
    Add(net, "Dropout", {x}, {p + name, p + name + "_mask"},
        {MakeArgument("ratio", o.dropout), MakeArgument("is_test", 0)});
    return p + name;
  };
  const std::vector<Argument> leaky{MakeArgument("alpha", o.leaky_slope)};
  Add(net, "Conv", {images, "d_conv1_w", "d_conv1_b"}, {p + "d_conv1"}, Stride2Kernel4());
  Add(net, "LeakyRelu", {p + "d_conv1"}, {p + "d_act1"}, leaky);
  const std::string h1 = dropout(p + "d_act1", "d_drop1");
  Add(net, "Conv", {h1, "d_conv2_w"}, {p + "d_conv2"}, Stride2Kernel4());
  BatchNorm(net, "d_bn2", p + "d_conv2", p + "d_bn2", false);
  Add(net, "LeakyRelu", {p + "d_bn2"}, {p + "d_act2"}, leaky);
  const std::string h2 = dropout(p + "d_act2", "d_drop2");
  Add(net, "FC", {h2, "d_adv_w", "d_adv_b"}, {p + "adv"});
  Add(net, "FC", {h2, "d_cls_w", "d_cls_b"}, {p + "cls"});
  return {p + "adv", p + "cls"};
}

// Mean BCE of `logit` against an all-`target` label, and the mean softmax cross entropy of `cls`
// against `label`; returns the two loss blobs.
std::vector<std::string> Losses(NetDef* net, const std::string& tag, const Heads& h, float target,
                                const std::string& label) {
  const std::string p = tag + "/";
  Add(net, "ConstantFill", {h.adv}, {p + "adv_target"}, {MakeArgument("value", target)});
  Add(net, "SigmoidCrossEntropyWithLogits", {h.adv, p + "adv_target"}, {p + "adv_xent"});
  Add(net, "AveragedLoss", {p + "adv_xent"}, {p + "adv_loss"});
  Add(net, "SoftmaxWithLoss", {h.cls, label}, {p + "cls_prob", p + "cls_loss"});
  return {p + "adv_loss", p + "cls_loss"};
}

void NoiseOps(NetDef* net, const AcGanOptions& o, const std::string& noise,
              const std::string& label) {
  Add(net, "GaussianFill", {}, {noise},
      {MakeArgument("shape", std::vector<int64_t>{o.batch_size, o.noise_dim}),
       MakeArgument("mean", 0.f), MakeArgument("std", 1.f)});
  Add(net, "UniformIntFill", {}, {label},
      {MakeArgument("shape", std::vector<int64_t>{o.batch_size}), MakeArgument("min", 0),
       MakeArgument("max", o.num_classes - 1)});
}

}  // namespace

std::vector<std::string> AcGanFrozenParams() { return {"g_fc_b"}; }

AcGanNets BuildAcGan(const AcGanOptions& o) {
  HALFCAF_ENFORCE(o.batch_size >= 1 && o.noise_dim >= 1 && o.num_classes >= 2,
                  "AC-GAN: the batch size and noise size must be at least 1 and the classes at "
                  "least 2, got ", o.batch_size, ", ", o.noise_dim, " and ", o.num_classes);
  HALFCAF_ENFORCE(o.dropout >= 0.f && o.dropout < 1.f, "AC-GAN: dropout must be in [0, 1), got ",
                  o.dropout);
  AcGanNets n;
  n.init.set_name("acgan_init");
  n.d_step.set_name("d_step");
  n.g_step.set_name("g_step");
  n.sampler.set_name("acgan_sampler");
  Params g{&n.init, &n.g_params}, d{&n.init, &n.d_params};
  g.Gaussian("g_embed_w", {o.num_classes, o.noise_dim}, 1.f);
  g.Gaussian("g_fc_w", {kGenChannels * kSeed * kSeed, o.noise_dim}, 0.02f);
  g.Constant("g_fc_b", kGenChannels * kSeed * kSeed, 0.f);
  g.BatchNorm("g_bn0", kGenChannels);
  g.Gaussian("g_deconv1_w", {kGenChannels, kGenMid, 4, 4}, 0.02f);
  g.BatchNorm("g_bn1", kGenMid);
  g.Gaussian("g_deconv2_w", {kGenMid, 1, 4, 4}, 0.02f);
  g.Constant("g_deconv2_b", 1, 0.f);
  d.Gaussian("d_conv1_w", {kDiscMid, 1, 4, 4}, 0.02f);
  d.Constant("d_conv1_b", kDiscMid, 0.f);
  d.Gaussian("d_conv2_w", {kDiscChannels, kDiscMid, 4, 4}, 0.02f);
  d.BatchNorm("d_bn2", kDiscChannels);
  d.Gaussian("d_adv_w", {1, kFeatures}, 0.02f);
  d.Constant("d_adv_b", 1, 0.f);
  d.Gaussian("d_cls_w", {o.num_classes, kFeatures}, 0.02f);
  d.Constant("d_cls_b", o.num_classes, 0.f);

  // Discriminator step.
  NetDef* ds = &n.d_step;
  if (o.noise_ops) NoiseOps(ds, o, "d_noise", "d_gen_label");
  const std::string fake = Generator(ds, o, "d_step", "d_noise", "d_gen_label", false);
  Add(ds, "StopGradient", {fake}, {"d_step/fake_detached"});
  const Heads real = Discriminator(ds, o, "d_step/real", kAcGanData);
  const Heads faked = Discriminator(ds, o, "d_step/fake", "d_step/fake_detached");
  std::vector<std::string> terms = Losses(ds, "d_step/real", real, 1.f, kAcGanLabel);
  for (const auto& t : Losses(ds, "d_step/fake", faked, 0.f, "d_gen_label")) terms.push_back(t);
  Add(ds, "Sum", terms, {kAcGanDLoss});
  Add(ds, "Accuracy", {"d_step/real/cls_prob", kAcGanLabel}, {kAcGanDAccuracy});

  // Generator step.
  NetDef* gs = &n.g_step;
  if (o.noise_ops) NoiseOps(gs, o, "g_noise", "g_gen_label");
  const std::string made = Generator(gs, o, "g_step", "g_noise", "g_gen_label", false);
  const Heads judged = Discriminator(gs, o, "g_step", made);
  Add(gs, "Sum", Losses(gs, "g_step", judged, 1.f, "g_gen_label"), {kAcGanGLoss});

  // Sampler: the generator in test mode, images in [-1, 1].
  const std::string s =
      Generator(&n.sampler, o, "sampler", kAcGanSampleNoise, kAcGanSampleLabel, true);
  Add(&n.sampler, "Copy", {s}, {kAcGanSample});
  for (NetDef* net : {&n.d_step, &n.g_step, &n.sampler}) {
    for (const auto& op : n.init.op()) net->add_external_input(op.output(0));
  }
  for (const char* b : {kAcGanData, kAcGanLabel}) n.d_step.add_external_input(b);
  n.d_step.add_external_output(kAcGanDLoss);
  n.g_step.add_external_output(kAcGanGLoss);
  n.sampler.add_external_input(kAcGanSampleNoise);
  n.sampler.add_external_input(kAcGanSampleLabel);
  n.sampler.add_external_output(kAcGanSample);
  return n;
}

}  // namespace halfcaf
