// ImageInput on CUDA: the same arguments, records, random draws and errors as the CPU op
// (image_input_op.cc, schema there). Caffe2 nets put ImageInput under a GPU device scope, so the
// batch must end on the GPU: the records are read, decoded and cropped on the host by the shared
// ImageBatchLoader (decode_threads threads), then
//   - without use_gpu_transform: normalized on the host to float NHWC and copied to the GPU;
//   - with use_gpu_transform: the uint8 NHWC crops are copied (4x fewer bytes than float) and a
//     kernel (gpu/image_kernels.cu) writes NCHW float / float16 with the mean / std.
// The labels (int32) are copied to the GPU too. Copies go through pinned staging buffers on the
// op's stream. With the same random_seed the outputs equal the CPU op's bit for bit.
// Prefetching is the CPU op's: after each run the loader's background thread reads, decodes and
// crops (and, without use_gpu_transform, normalizes) the next batch on the host while the net
// runs; the run then only queues the copies (no_prefetch = 1: all of it when the op runs).
#include <cuda_runtime.h>

#include <memory>

#include "core/half.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/image_kernels.h"
#include "gpu/pinned_buffer.h"
#include "operators/input/image_input_op.h"

namespace halfcaf {

namespace {

class ImageInputCUDAOp final : public Operator<CUDAContext> {
 public:
  ImageInputCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        loader_(*this, &context_.RandGenerator(), /*device_transform=*/true) {
    const ImageInputConfig& cfg = loader_.config();
    for (int c = 0; c < 3; ++c) {
      affine_.mean[c] = c < cfg.channels ? cfg.mean[c] : 0.f;
      affine_.inv_std[c] = c < cfg.channels ? cfg.inv_std[c] : 1.f;
    }
    pixels_dev_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const ImageInputConfig& cfg = loader_.config();
    const std::shared_ptr<const db::DBReader> reader = loader_.Reader(*this);
    // Read and decoded on the host, by the prefetch thread while the net ran (or now).
    const ImageBatch& batch = loader_.Next(reader);
    const int64_t hw = static_cast<int64_t>(cfg.crop) * cfg.crop;
    const int64_t numel = cfg.batch_size * hw * cfg.channels;

    cudaStream_t stream = context_.stream();
    Tensor* label = Output(1, {cfg.batch_size});
    label_staging_.CopyToDevice(batch.labels.data<int32_t>(), batch.labels.nbytes(),
                                label->mutable_data<int32_t>(), stream);
    Tensor* data = Output(0, cfg.DataDims());
    if (!cfg.gpu_transform) {  // normalized on the host by the loader
      data_staging_.CopyToDevice(batch.data.data<float>(), batch.data.nbytes(),
                                 data->mutable_data<float>(), stream);
    } else {
      pixels_dev_.Resize({numel});
      uint8_t* dev = pixels_dev_.mutable_data<uint8_t>();
      data_staging_.CopyToDevice(batch.pixels.data(), batch.pixels.size(), dev, stream);
      if (cfg.output_type == DataType::FLOAT) {
        gpu::NormalizeImagesNCHW(cfg.batch_size, hw, cfg.channels, dev, affine_,
                                 data->mutable_data<float>(), stream);
      } else {
        gpu::NormalizeImagesNCHW(cfg.batch_size, hw, cfg.channels, dev, affine_,
                                 data->mutable_data<Half>(), stream);
      }
    }
    // The staging copies are done with the host batch: the next one may be prepared.
    loader_.Ahead(reader);
  }

 private:
  ImageBatchLoader loader_;
  gpu::ImageAffine affine_;
  Tensor pixels_dev_;  // the uint8 crops on the GPU (use_gpu_transform)
  gpu::PinnedStagingBuffer data_staging_, label_staging_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ImageInput, ImageInputCUDAOp);

}  // namespace halfcaf
