// The AC-GAN (auxiliary-classifier GAN: the discriminator also classifies, so the generator draws a
// requested class), DCGAN-style for 1 x 28 x 28 images with channel counts multiples of 8, as the
// nets of its two training steps plus a sampler, all over one set of parameters.
//
//   generator      noise (B, noise_dim) * Gather(g_embed_w (classes, noise_dim), class)
//                  -> FC g_fc to 128*7*7 -> (B, 128, 7, 7) -> SpatialBN g_bn0, Relu
//                  -> ConvTranspose g_deconv1 4x4/2 to 64 x 14 x 14 -> SpatialBN g_bn1, Relu
//                  -> ConvTranspose g_deconv2 4x4/2 to 1 x 28 x 28 -> Tanh (images in [-1, 1])
//   discriminator  Conv d_conv1 4x4/2 to 64 x 14 x 14, LeakyRelu 0.2, Dropout
//                  -> Conv d_conv2 4x4/2 to 128 x 7 x 7 (no bias), SpatialBN d_bn2, LeakyRelu 0.2,
//                  Dropout -> two FC heads on the 6272 features: d_adv (1 real/fake logit) and
//                  d_cls (classes logits)
//
// Weights N(0, 0.02) (the embedding N(0, 1)), biases zero, BatchNorm as PyTorch's (momentum 0.1,
// unbiased running variance). g_fc's bias is cancelled by the BatchNorm after it: the trainer
// freezes it at zero (FrozenParams), so the generator has no bias there, as the PyTorch peer.
//
// The discriminator step (d_step): the generator makes a batch from `d_noise`, `d_gen_label`;
// StopGradient detaches it; the discriminator sees the real batch (`data`, `label`) and the fake
// one; d_loss = BCE(real adv, 1) + CE(real cls, label) + BCE(fake adv, 0) + CE(fake cls,
// d_gen_label) (each a batch mean). The generator step (g_step): a new batch from `g_noise`,
// `g_gen_label` through the discriminator; g_loss = BCE(adv, 1) + CE(cls, g_gen_label). With
// noise_ops the nets draw their noise (GaussianFill) and requested classes (UniformIntFill) at
// each run; without, the caller feeds those four blobs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct AcGanOptions {
  int64_t batch_size = 64;
  int64_t noise_dim = 100;
  int num_classes = 10;
  float dropout = 0.25f;  // the discriminator's; 0 leaves Dropout out
  float leaky_slope = 0.2f;
  bool noise_ops = true;
};

struct AcGanNets {
  NetDef init;     // every parameter and BatchNorm statistic of both networks
  NetDef d_step;   // reads data, label (and d_noise, d_gen_label without noise_ops); writes
                   // d_loss, d_accuracy (the class head on the real batch)
  NetDef g_step;   // reads g_noise, g_gen_label when fed; writes g_loss
  NetDef sampler;  // test mode: sample_noise (N, noise_dim), sample_label (N) int32 -> sample
  std::vector<std::string> g_params, d_params;  // learned parameters and statistics, by network
};

extern const char kAcGanData[];        // "data": real images (B, 1, 28, 28) in [-1, 1]
extern const char kAcGanLabel[];       // "label": their classes, int32 (B)
extern const char kAcGanDLoss[];       // "d_loss"
extern const char kAcGanGLoss[];       // "g_loss"
extern const char kAcGanDAccuracy[];   // "d_accuracy"
extern const char kAcGanSampleNoise[]; // "sample_noise"
extern const char kAcGanSampleLabel[]; // "sample_label"
extern const char kAcGanSample[];      // "sample": generated images in [-1, 1]

// Throws on a batch size, noise size or class count below 1, or a dropout outside [0, 1).
AcGanNets BuildAcGan(const AcGanOptions& options);

// Parameters the trainer keeps frozen: g_fc_b (zero; see above).
std::vector<std::string> AcGanFrozenParams();

}  // namespace halfcaf
