#pragma once
/// SyncBatchNorm: batch normalization over the global batch of every replica in sync
/// (torch.nn.SyncBatchNorm, tf.keras.layers.BatchNormalization(synchronized=True)).

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace est {

class ReplicaContext;

/// Options of SyncBatchNorm, as torch::nn::BatchNormOptions.
struct SyncBatchNormOptions {
  /// `num_features`: the channels C of inputs of shape [N, C, ...].
  /* implicit */ SyncBatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  TORCH_ARG(int64_t, num_features);
  /// Added to the variance before its square root.
  TORCH_ARG(double, eps) = 1e-5;
  /// Weight of a step's statistics in the running statistics.
  TORCH_ARG(double, momentum) = 0.1;
  /// Whether the module has a learnable scale (weight) and shift (bias).
  TORCH_ARG(bool, affine) = true;
  /// Whether the module keeps running statistics, used in evaluation and prediction.
  TORCH_ARG(bool, track_running_stats) = true;
};

/// Batch normalization whose training statistics are those of the global batch: each
/// replica's per-channel mean and variance, combined over every replica in sync with their
/// example counts (which may differ), through the replica context's all_gather, which is
/// differentiable, so gradients are those of normalization over the global batch. N replicas
/// therefore train as one replica on their N batches together. Parameters and buffers have
/// torch::nn::BatchNorm's names (weight, bias, running_mean, running_var,
/// num_batches_tracked), so checkpoints of either restore into the other. In evaluation and
/// prediction it normalizes with the running statistics and calls no collective. Create it in
/// model_fn with ModelContext::module and call it with the context's replica_context().
class SyncBatchNormImpl : public torch::nn::Module {
 public:
  explicit SyncBatchNormImpl(SyncBatchNormOptions options);

  /// Normalizes `input` ([N, C, ...]); in training (or without running statistics) with the
  /// statistics of every replica's batch, which every replica calls alike. ModelError for an
  /// input whose dimension 1 is not num_features.
  at::Tensor forward(const at::Tensor& input, ReplicaContext& replicas);

  /// The options it was made with.
  const SyncBatchNormOptions& options() const { return options_; }

 private:
  SyncBatchNormOptions options_;
  at::Tensor weight_, bias_;
  at::Tensor running_mean_, running_var_, num_batches_tracked_;
};

/// A module holder of SyncBatchNormImpl.
TORCH_MODULE(SyncBatchNorm);

}  // namespace est
