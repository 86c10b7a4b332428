// Training a model imported from ONNX (onnx/onnx_import.h): its predict net becomes a forward net
// with a loss that the Trainer fine-tunes. BatchNormalization switches to training mode (batch
// statistics; running statistics updated in place with the model's own momentum, and for a
// model PyTorch exported with the unbiased batch variance, as PyTorch updates them), a final
// Softmax is dropped in favour of SoftmaxWithLoss on its input (the logits), an Accuracy is
// added, and the last FC can be replaced by a fresh one for another number of classes.
//
// PyTorch's eval-mode export folds each BatchNorm that follows a convolution into it, so those
// have nothing left to train: folded_convs counts the convolutions whose weights the exporter
// made that way (PyTorch names them "onnx::Conv_<n>"), for a warning.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "onnx/onnx_import.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct ImportedTrainingOptions {
  std::string label_blob = "label", loss_blob = "loss", accuracy_blob = "accuracy";
  // The blob the loss reads; empty: the input of the net's final Softmax, else its only output.
  std::string logits;
  // > 0 and different from the last FC's output width: that FC gets fresh parameters (Xavier
  // weights, zero bias) of this many classes.
  int num_classes = 0;
  // For a BatchNormalization without its own momentum attribute.
  float bn_momentum = 0.9f;
};

struct TrainableNets {
  NetDef init, forward;
  std::string data_blob;   // the model's (only) input
  std::string logits;      // what the loss reads
  bool replaced_classifier = false;
  int batch_norms = 0;   // BatchNormalization layers that train
  int folded_convs = 0;  // convolutions with BatchNorm folded in by PyTorch's eval export
  // The model's static value dims (ImportedNet::blob_dims), without the replaced classifier's;
  // for TrainerOptions::blob_dims.
  std::map<std::string, std::vector<int64_t>> blob_dims;
};

// Throws a clear error for a model with no or several inputs, a logits blob the net does not
// produce, or no FC to resize for num_classes.
TrainableNets MakeTrainable(const ImportedNet& net, const ImportedTrainingOptions& options);

}  // namespace halfcaf
