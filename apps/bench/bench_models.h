#pragma once
// The models and data of the training benchmarks, shared by our Estimator and the
// hand-written loop (apps/bench/ddp_peer.py builds the same ones in Python).

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <utility>

#include "apps/common/fashion_mnist_cnn.h"
#include "data/idx.h"

namespace est_bench {

/// est-train's Fashion-MNIST CNN (Conv 32×3×3, max-pool, dense 64, dense 10).
inline torch::nn::Sequential MakeCnn() { return torch::nn::Sequential(est_apps::FashionMnistCnn()); }

/// A communication-heavy MLP of about 21 M parameters: 1024 → 4096 → 4096 → 10.
inline torch::nn::Sequential MakeMlp() {
  return torch::nn::Sequential(torch::nn::Linear(1024, 4096), torch::nn::ReLU(), torch::nn::Linear(4096, 4096),
                               torch::nn::ReLU(), torch::nn::Linear(4096, 10));
}

/// The model named "cnn" or "mlp", initialised from a fixed seed, so that every loop
/// trains the same weights on the same data and does the same arithmetic.
inline torch::nn::Sequential MakeModel(const std::string& name) {
  torch::manual_seed(1);
  return name == "cnn" ? MakeCnn() : MakeMlp();
}

/// `count` batches of `batch_size` examples, stacked: inputs [count, batch_size, ...] and
/// labels [count, batch_size]. The CNN gets the first Fashion-MNIST training images
/// (scaled to [0, 1]) and their labels; the MLP gets normal noise (seed 7) and random labels.
inline std::pair<torch::Tensor, torch::Tensor> MakeBatches(const std::string& model, int64_t batch_size,
                                                           int64_t count) {
  const int64_t examples = batch_size * count;
  if (model == "cnn") {
    const std::string dir = est_apps::kFashionMnistDir;
    torch::Tensor images = est::data::ReadIdx(dir + "/train-images-idx3-ubyte.gz");
    torch::Tensor labels = est::data::ReadIdx(dir + "/train-labels-idx1-ubyte.gz");
    TORCH_CHECK(images.size(0) >= examples, "the benchmark needs ", examples, " Fashion-MNIST images, ", dir,
                " has ", images.size(0));
    images = images.slice(0, 0, examples).to(torch::kFloat32).div_(255.0);
    return {images.reshape({count, batch_size, 1, 28, 28}).contiguous(),
            labels.slice(0, 0, examples).to(torch::kLong).reshape({count, batch_size}).contiguous()};
  }
  torch::manual_seed(7);
  return {torch::randn({count, batch_size, 1024}), torch::randint(0, 10, {count, batch_size})};
}

}  // namespace est_bench
