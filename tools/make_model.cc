// make_model: writes a model-zoo net (LeNet, ResNet-18, ResNet-50) as two protobuf text files in
// --out, for reading, editing, and for run_net / train_net / benchmark --net:
//
//   init_net.pbtxt   creates every parameter: one filler op per blob (XavierFill / MSRAFill /
//                    GaussianFill weights, ConstantFill biases, BN scale 1, bias 0, running mean 0,
//                    running variance 1), each with its `shape`.
// --model acgan writes the AC-GAN (models/acgan.h) instead: init_net.pbtxt (both networks'
// parameters), d_step_net.pbtxt and g_step_net.pbtxt (the forward nets of the discriminator's and
// the generator's training steps, drawing their own noise; train_gan adds the backward passes
// and the two optimizers) and sampler_net.pbtxt (the generator in test mode).
//
//   train_net.pbtxt  the forward net with its loss, as the zoo builds it (models/zoo.h): reads
//                    `data` ((N, C, H, W) or (N, H, W, C) by --order) and `label` (int32, (N)),
//                    writes `softmax`, `loss` and `accuracy`. No data-input, gradient or update
//                    ops: train_net adds them (backward pass, momentum SGD, learning rate).
//                    With --is_test, SpatialBN runs on its running statistics (inference).
//
// --dtype float16 writes the mixed-precision version (models/mixed_precision.h), exactly what
// train_net --dtype float16 builds internally: Conv and FC read FP16 copies `<param>_fp16` of
// the FP32 master parameters and FP16 activations, SpatialBN keeps FP32 parameters, HalfToFloat
// casts sit in front of softmax / loss / accuracy. `data` is expected as float16 (as train_net's
// reader makes it in mixed precision); `label` stays int32. The init net ends with one
// FloatToHalf op per master, making its `<param>_fp16` copy. train_net trains these files with
// --dtype float16 (it recognises the ready-made copies and updates the FP32 masters).
#include <gflags/gflags.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <set>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/proto_io.h"
#include "models/acgan.h"
#include "models/mixed_precision.h"
#include "models/model_helper.h"
#include "models/zoo.h"
#include "tools/tool_common.h"

DEFINE_string(model, "resnet50", "resnet50, resnet18, lenet or acgan");
DEFINE_string(order, "NCHW", "storage order of the data and activations: NCHW or NHWC");
DEFINE_string(dtype, "float", "float (FP32 net) or float16 (the mixed-precision net)");
DEFINE_int32(num_classes, 0, "output classes (0: 1000 for ResNet, 10 for LeNet)");
DEFINE_int32(image_size, 0,
             "input height and width (0: 224 for ResNet, 28 for LeNet; LeNet needs >= 16)");
DEFINE_int32(image_channels, 0, "input channels (0: the model's, 3 for ResNet, 1 for LeNet)");
DEFINE_bool(is_test, false, "inference net: SpatialBN uses its running statistics");
DEFINE_string(out, "", "output folder (created if missing)");

namespace halfcaf {
namespace {

void MakeDirs(const std::string& dir) {
  std::string path;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!path.empty()) {
        struct stat st;
        if (stat(path.c_str(), &st) != 0) {
          HALFCAF_ENFORCE(mkdir(path.c_str(), 0755) == 0 || errno == EEXIST,
                          "--out: cannot create '", path, "' (", std::strerror(errno), ")");
        } else {
          HALFCAF_ENFORCE(S_ISDIR(st.st_mode), "--out: '", path, "' exists and is not a folder");
        }
      }
    }
    if (i < dir.size()) path += dir[i];
  }
}

// --model acgan: the AC-GAN's nets (models/acgan.h), float32, NCHW.
int WriteAcGan() {
  HALFCAF_ENFORCE(FLAGS_dtype == "float" && FLAGS_order == "NCHW" && !FLAGS_is_test,
                  "--model acgan is written in float32, NCHW, for training (train_gan makes its "
                  "mixed-precision version): leave out --dtype, --order and --is_test");
  AcGanOptions o;
  if (FLAGS_num_classes > 0) o.num_classes = FLAGS_num_classes;
  const AcGanNets nets = BuildAcGan(o);
  MakeDirs(FLAGS_out);
  WriteProtoToFile(nets.init, FLAGS_out + "/init_net.pbtxt", true);
  WriteProtoToFile(nets.d_step, FLAGS_out + "/d_step_net.pbtxt", true);
  WriteProtoToFile(nets.g_step, FLAGS_out + "/g_step_net.pbtxt", true);
  WriteProtoToFile(nets.sampler, FLAGS_out + "/sampler_net.pbtxt", true);
  std::cout << "make_model: acgan (batch " << o.batch_size << ", " << o.num_classes
            << " classes; " << nets.g_params.size() << " generator and " << nets.d_params.size()
            << " discriminator blobs) -> " << FLAGS_out
            << "/{init,d_step,g_step,sampler}_net.pbtxt" << std::endl;
  return 0;
}

int Main() {
  HALFCAF_ENFORCE(!FLAGS_out.empty(), "--out is required (the folder for the .pbtxt files)");
  const std::string& m = FLAGS_model;
  HALFCAF_ENFORCE(m == "resnet50" || m == "resnet18" || m == "lenet" || m == "acgan",
                  "--model must be resnet50, resnet18, lenet or acgan, got '", m, "'");
  if (m == "acgan") return WriteAcGan();
  HALFCAF_ENFORCE(FLAGS_order == "NCHW" || FLAGS_order == "NHWC",
                  "--order must be NCHW or NHWC, got '", FLAGS_order, "'");
  HALFCAF_ENFORCE(FLAGS_dtype == "float" || FLAGS_dtype == "float16",
                  "--dtype must be float or float16, got '", FLAGS_dtype, "'");
  HALFCAF_ENFORCE(FLAGS_num_classes >= 0, "--num_classes must be positive, got ",
                  FLAGS_num_classes);
  const int classes = FLAGS_num_classes > 0 ? FLAGS_num_classes : (m == "lenet" ? 10 : 1000);
  HALFCAF_ENFORCE(FLAGS_image_size >= 0, "--image_size must be positive, got ", FLAGS_image_size);
  HALFCAF_ENFORCE(FLAGS_image_channels >= 0, "--image_channels must be >= 0, got ",
                  FLAGS_image_channels);
  HALFCAF_ENFORCE(m == "lenet" || FLAGS_image_channels == 0 || FLAGS_image_channels == 3,
                  "--image_channels: ResNet takes 3 channels, got ", FLAGS_image_channels);

  const int size = FLAGS_image_size > 0 ? FLAGS_image_size : (m == "lenet" ? 28 : 224);
  ModelHelper model(m, FLAGS_order, FLAGS_is_test);
  if (m == "lenet") {
    BuildLeNet(&model, classes, FLAGS_image_channels ? FLAGS_image_channels : 1, size);
  } else {
    BuildResNet(&model, m == "resnet50" ? 50 : 18, classes, size);
  }
  NetDef init = model.init_net();
  NetDef net = model.net();
  if (FLAGS_dtype == "float16") {
    // As the trainer does it: every parameter but the BN running statistics is a master.
    std::set<std::string> masters;
    for (const auto& p : model.params()) {
      if (p.role != ParamRole::BN_RUNNING_MEAN && p.role != ParamRole::BN_RUNNING_VAR) {
        masters.insert(p.name);
      }
    }
    MixedPrecisionResult mp = ToMixedPrecision(net, {kZooData}, masters);
    net = mp.net;
    for (const auto& p : mp.fp16_params) {
      *init.add_op() = MakeOperatorDef("FloatToHalf", "", {p}, {Fp16CopyName(p)});
    }
  }
  MakeDirs(FLAGS_out);
  WriteProtoToFile(init, FLAGS_out + "/init_net.pbtxt", true);
  WriteProtoToFile(net, FLAGS_out + "/train_net.pbtxt", true);
  std::cout << "make_model: " << m << " (" << FLAGS_order << ", " << FLAGS_dtype
            << (FLAGS_is_test ? ", test mode" : "") << ", " << model.NumLearnedParams()
            << " parameters, " << net.op_size() << " ops) -> " << FLAGS_out
            << "/{init_net,train_net}.pbtxt" << std::endl;
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool(
      "make_model",
      "make_model --model resnet50|resnet18|lenet|acgan --order NCHW|NHWC "
      "--dtype float|float16 [--num_classes N] [--image_size S] [--is_test] --out DIR",
      argc, argv, halfcaf::Main);
}
