// The Fashion-MNIST CNN, its map and its input pipeline.

#include "apps/common/fashion_mnist_cnn.h"

#include <torch/torch.h>

#include "common/error.h"
#include "data/tfrecord_dataset.h"
#if EST_WITH_KERNELS
#include "kernels/conv2d_relu_max_pool.h"
#include "kernels/fused_forward.h"
#include "kernels/linear.h"
#endif

namespace est_apps {

void CheckKernelsBuilt(bool kernels, const char* flag) {
  EST_CHECK(!kernels || kKernelsBuilt, est::ConfigError, flag, " asks for the kernels of kernels/, but this build "
            "left them out (EST_WITH_KERNELS=OFF); run the stock LibTorch layers, or build with EST_WITH_KERNELS=ON");
}

FashionMnistCnnImpl::FashionMnistCnnImpl(CnnLayers layers)
    : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)))),
      hidden(register_module("hidden", torch::nn::Linear(32 * 13 * 13, 64))),
      logits(register_module("logits", torch::nn::Linear(64, 10))),
      layers_(layers) {
  CheckKernelsBuilt(layers != CnnLayers::kLibTorch, "FashionMnistCnn on est::kernels");
#if EST_WITH_KERNELS
  if (layers == CnnLayers::kFused)
    fused_ = std::make_shared<est::kernels::FusedForward>(
        *this, [this](const torch::Tensor& images) { return LibTorchLayers(images); });
#endif
}

torch::Tensor FashionMnistCnnImpl::LibTorchLayers(const torch::Tensor& images) {
  auto x = torch::max_pool2d(torch::relu(conv->forward(images)), 2);
  auto h = torch::relu(hidden->forward(x.flatten(1)));
  return logits->forward(h);
}

torch::Tensor FashionMnistCnnImpl::forward(torch::Tensor images) {
#if EST_WITH_KERNELS
  if (layers_ == CnnLayers::kFused) return (*fused_)(images);
  if (layers_ == CnnLayers::kKernels) {
    // The same layers on kernels of ours: the convolution, relu and max-pool in one op.
    auto x = est::kernels::Conv2dReluMaxPool2x2(images, conv->weight, conv->bias);
    auto h = torch::relu(est::kernels::Linear(x.flatten(1), hidden->weight, hidden->bias));
    return est::kernels::Linear(h, logits->weight, logits->bias);
  }
#endif
  return LibTorchLayers(images);
}

est::data::Element Scale(est::data::Element example) {
  example.features["image"] = example.features["image"].to(torch::kFloat32).div_(255.0).unsqueeze_(0);
  return example;
}

est::data::Dataset FashionMnistPipeline(const est::data::Dataset& source,
                                        const FashionMnistPipelineOptions& options) {
  auto dataset = source.shard(options.num_shards, options.shard_index)
                     .map(Scale, options.num_parallel_calls);
  if (options.cache) dataset = dataset.cache();
  if (options.training) {
    // Cached examples are shuffled within each epoch, as in the tutorial. A stream repeats first:
    // its length is unknown, and a shuffle over an endless input restores its position by
    // replaying draws, parsing only the records still in its buffer (data/dataset.h).
    dataset = options.cache ? dataset.shuffle(kFashionMnistShuffleBuffer, options.shuffle_seed).repeat()
                            : dataset.repeat().shuffle(kFashionMnistShuffleBuffer, options.shuffle_seed);
  }
  return dataset.batch(options.batch_size).prefetch(2);
}

est::data::ExampleSpec FashionMnistExampleSpec() {
  using est::data::FeatureSpec;
  using est::data::FeatureType;
  return {{"image", FeatureSpec::FixedLen(FeatureType::kBytes).decoder(est::data::DecodeRaw(torch::kUInt8, {28, 28}))},
          {"label", FeatureSpec::FixedLen(FeatureType::kInt64)}};
}

est::data::Dataset FashionMnistRecords(const std::vector<std::string>& files, est::data::TFRecordCompression compression,
                                       int64_t num_shards, int64_t shard_index, int64_t num_parallel_calls) {
  const auto options = est::data::TFRecordDatasetOptions()
                           .reader(est::data::TFRecordReaderOptions().compression(compression))
                           .parser(est::data::ParseExample(FashionMnistExampleSpec(), "label"));
  auto records = [options](const std::string& file) { return est::data::TFRecordDataset({file}, options); };
  return est::data::Dataset::InterleaveFiles(
             files, records, est::data::InterleaveOptions().cycle_length(4).num_parallel_calls(num_parallel_calls))
      .auto_shard(num_shards, shard_index);
}

}  // namespace est_apps
