#pragma once
// The Fashion-MNIST CNN of TensorFlow's "Multi-worker training with Estimator" tutorial,
// its uint8 -> float map and its input pipeline: one definition for est-train and the
// benchmarks.

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "data/dataset.h"
#include "data/element.h"
#include "data/example.h"
#include "data/tfrecord.h"

namespace est::kernels {
class FusedForward;
}

namespace est_apps {

/// Where Debian's dataset-fashion-mnist package installs the IDX files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Whether the kernels of kernels/ are built (EST_WITH_KERNELS): the default of the models'
/// `kernels` arguments.
inline constexpr bool kKernelsBuilt = EST_WITH_KERNELS;

/// How FashionMnistCnn computes its layers. The parameters, their initial values and the
/// checkpoints are the same for each.
enum class CnnLayers {
  kLibTorch,  ///< LibTorch's torch::nn layers, op by op
  kFused,     ///< the same layers, the forward run by est::kernels::FusedForward (a traced graph,
              ///< its convolution → relu → max-pool fused)
  kKernels,   ///< est::kernels' ops fitted to this model (Conv2dReluMaxPool2x2, Linear)
};

/// Conv 32×3×3 → relu → max-pool 2 → dense 64 → relu → dense 10, on float [N, 1, 28, 28]
/// images; returns logits [N, 10]. Its submodules are named "conv", "hidden" and "logits"
/// (checkpoint keys: keep them).
struct FashionMnistCnnImpl : torch::nn::Module {
  /// The layers computed as `layers` says. ConfigError for kFused and kKernels where the
  /// kernels are not built.
  explicit FashionMnistCnnImpl(CnnLayers layers = kKernelsBuilt ? CnnLayers::kKernels : CnnLayers::kLibTorch);

  /// Logits [N, 10] of float images [N, 1, 28, 28].
  torch::Tensor forward(torch::Tensor images);

  torch::nn::Conv2d conv;    ///< 1 → 32 channels, 3×3
  torch::nn::Linear hidden;  ///< 32·13·13 → 64
  torch::nn::Linear logits;  ///< 64 → 10

 private:
  torch::Tensor LibTorchLayers(const torch::Tensor& images);

  CnnLayers layers_;
  // For kFused. Shared: its type is complete only where the kernels are built.
  std::shared_ptr<est::kernels::FusedForward> fused_;
};

/// ConfigError naming `flag` where `kernels` asks for the kernels of a build without them.
void CheckKernelsBuilt(bool kernels, const char* flag);
/// The module holder (shared pointer) of FashionMnistCnnImpl.
TORCH_MODULE(FashionMnistCnn);

/// The map of the pipeline: a uint8 [28, 28] "image" feature becomes float [1, 28, 28]
/// in [0, 1]; the labels are kept.
est::data::Element Scale(est::data::Element example);

/// The shuffle buffer of the training pipeline, in examples.
inline constexpr int64_t kFashionMnistShuffleBuffer = 10000;

/// How FashionMnistPipeline builds the pipeline.
struct FashionMnistPipelineOptions {
  bool training = true;            ///< shuffle and repeat forever; eval makes one pass
  int64_t num_shards = 1;          ///< shard(num_shards, shard_index)
  int64_t shard_index = 0;
  int64_t num_parallel_calls = 1;  ///< map's; est::data::kAutotune allowed
  int64_t batch_size = 64;         ///< per replica
  uint64_t shuffle_seed = 42;      ///< training only
  bool cache = true;               ///< keep the mapped examples in memory after the first pass
};

/// The pipeline over `source` (Fashion-MNIST examples): shard, map(Scale), cache, then for
/// training shuffle(kFashionMnistShuffleBuffer, seed) and repeat(), then batch and
/// prefetch(2). Without options.cache, training repeats before it shuffles. Built afresh on each call, so its cache starts empty.
est::data::Dataset FashionMnistPipeline(const est::data::Dataset& source,
                                        const FashionMnistPipelineOptions& options);

/// The tf.train.Example of a Fashion-MNIST example in TFRecord files: "image", its 784 pixels
/// as one bytes value (row-major uint8), and "label", an int64.
est::data::ExampleSpec FashionMnistExampleSpec();

/// The Fashion-MNIST examples of TFRecord `files` of FashionMnistExampleSpec records, as
/// FashionMnist() gives them ({"image": uint8 [28, 28]}, int64 labels), sharded by file for
/// input pipeline `shard_index` of `num_shards` (Dataset::auto_shard), its files read 4 at a
/// time by `num_parallel_calls` threads (InterleaveFiles).
est::data::Dataset FashionMnistRecords(const std::vector<std::string>& files, est::data::TFRecordCompression compression,
                                       int64_t num_shards, int64_t shard_index, int64_t num_parallel_calls);

}  // namespace est_apps
