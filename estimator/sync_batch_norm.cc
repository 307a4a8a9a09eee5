#include "estimator/sync_batch_norm.h"

#include <torch/torch.h>

#include <vector>

#include "common/error.h"
#include "estimator/replica_context.h"

namespace est {

SyncBatchNormImpl::SyncBatchNormImpl(SyncBatchNormOptions options) : options_(options) {
  const int64_t channels = options_.num_features();
  EST_CHECK(channels > 0, ConfigError, "SyncBatchNorm: num_features must be positive, got ", channels);
  EST_CHECK(options_.eps() > 0, ConfigError, "SyncBatchNorm: eps must be positive, got ", options_.eps());
  EST_CHECK(options_.momentum() >= 0 && options_.momentum() <= 1, ConfigError,
            "SyncBatchNorm: momentum must be in [0, 1], got ", options_.momentum());
  if (options_.affine()) {
    weight_ = register_parameter("weight", torch::ones({channels}));
    bias_ = register_parameter("bias", torch::zeros({channels}));
  }
  if (options_.track_running_stats()) {
    running_mean_ = register_buffer("running_mean", torch::zeros({channels}));
    running_var_ = register_buffer("running_var", torch::ones({channels}));
    num_batches_tracked_ = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
  }
}

at::Tensor SyncBatchNormImpl::forward(const at::Tensor& input, ReplicaContext& replicas) {
  const int64_t channels = options_.num_features();
  EST_CHECK(input.dim() >= 2 && input.size(1) == channels, ModelError, "SyncBatchNorm expects an input of shape [N, ",
            channels, ", ...], got ", input.sizes());
  if (!is_training() && options_.track_running_stats())
    return at::batch_norm(input, weight_, bias_, running_mean_, running_var_, /*training=*/false, 0, options_.eps(),
                          /*cudnn_enabled=*/true);

  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  const int64_t count = input.numel() / channels;
  EST_CHECK(count > 0, ModelError, "SyncBatchNorm: an input of shape ", input.sizes(), " has no values to normalize");
  auto [variance, mean] = at::var_mean(input, dims, /*unbiased=*/false, /*keepdim=*/false);
  double total = static_cast<double>(count);
  if (is_training() && replicas.num_replicas_in_sync() > 1) {
    // One row per replica: its means, its variances and its count, combined exactly as
    // the mean and variance of the union of the replicas' batches.
    const at::Tensor row = at::cat({mean, variance, at::full({1}, static_cast<double>(count), mean.options())});
    const at::Tensor rows = replicas.all_gather(row.unsqueeze(0), 0);
    const at::Tensor means = rows.slice(1, 0, channels);
    const at::Tensor variances = rows.slice(1, channels, 2 * channels);
    const at::Tensor counts = rows.slice(1, 2 * channels, 2 * channels + 1).detach();
    total = counts.sum().item<double>();
    mean = (means * counts).sum(0) / total;
    variance = ((variances + (means - mean).square()) * counts).sum(0) / total;
  }
  if (is_training() && options_.track_running_stats()) {
    torch::NoGradGuard no_grad;
    const double momentum = options_.momentum();
    running_mean_.mul_(1 - momentum).add_(mean.detach().to(running_mean_.scalar_type()), momentum);
    const double unbiased = total > 1 ? total / (total - 1) : 1.0;
    running_var_.mul_(1 - momentum).add_(variance.detach().to(running_var_.scalar_type()), momentum * unbiased);
    num_batches_tracked_.add_(1);
  }
  std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = channels;
  at::Tensor output = (input - mean.view(shape)) * at::rsqrt(variance.view(shape) + options_.eps());
  if (options_.affine()) output = output * weight_.view(shape) + bias_.view(shape);
  return output;
}

}  // namespace est
