#pragma once
// The models and data of the training benchmarks, shared by our Estimator and the
// hand-written loop (apps/bench/ddp_peer.py builds the same ones in Python).

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "apps/common/fashion_mnist_cnn.h"
#include "data/idx.h"
#if EST_WITH_KERNELS
#include "kernels/linear.h"
#endif

namespace est_bench {

/// est-train's Fashion-MNIST CNN (Conv 32×3×3, max-pool, dense 64, dense 10), on the kernels
/// fitted to it, or on LibTorch's layers (`fused`: run by est::kernels::FusedForward).
inline torch::nn::Sequential MakeCnn(bool kernels, bool fused = false) {
  using est_apps::CnnLayers;
  return torch::nn::Sequential(
      est_apps::FashionMnistCnn(kernels ? CnnLayers::kKernels : fused ? CnnLayers::kFused : CnnLayers::kLibTorch));
}

/// A communication-heavy MLP of about 21 M parameters: 1024 → 4096 → 4096 → 10, relu between.
/// Its submodules are torch::nn::Linear, made in order from the seed as Python's are. On the
/// kernels its dense layers run as est::kernels::Linear, whose weight gradient is ready before
/// its input's (so that the 4096 × 4096 weight's 67 MB can go on the wire a matrix product
/// earlier).
struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(bool kernels)
      : hidden1(register_module("hidden1", torch::nn::Linear(1024, 4096))),
        hidden2(register_module("hidden2", torch::nn::Linear(4096, 4096))),
        logits(register_module("logits", torch::nn::Linear(4096, 10))),
        kernels_(kernels) {
    est_apps::CheckKernelsBuilt(kernels, "the MLP on kernels");
  }

  /// Logits [N, 10] of inputs [N, 1024].
  torch::Tensor forward(const torch::Tensor& x) {
#if EST_WITH_KERNELS
    if (kernels_) {
      auto h = torch::relu(est::kernels::Linear(x, hidden1->weight, hidden1->bias));
      h = torch::relu(est::kernels::Linear(h, hidden2->weight, hidden2->bias));
      return est::kernels::Linear(h, logits->weight, logits->bias);
    }
#endif
    return logits(torch::relu(hidden2(torch::relu(hidden1(x)))));
  }

  torch::nn::Linear hidden1, hidden2, logits;

 private:
  bool kernels_;
};
/// The module holder (shared pointer) of MlpImpl.
TORCH_MODULE(Mlp);

/// The MLP as a Sequential, as the benchmarks take every model.
inline torch::nn::Sequential MakeMlp(bool kernels) { return torch::nn::Sequential(Mlp(kernels)); }

/// A ResNet basic block: two 3×3 convolutions with batch norm, plus the input (through a
/// strided 1×1 convolution when the shape changes).
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(out, out, 3).padding(1).bias(false)))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out)
      shortcut_ = register_module("shortcut", torch::nn::Sequential(
          torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)), torch::nn::BatchNorm2d(out)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    return torch::relu(y + (shortcut_.is_empty() ? x : shortcut_->forward(x)));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Sequential shortcut_{nullptr};
};
TORCH_MODULE(BasicBlock);

/// ResNet-18 for 3×32×32 images and 10 classes (about 11 M parameters): the ResNet-sized
/// model of the GPU benchmark.
inline torch::nn::Sequential MakeResNet18() {
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 64, 3).padding(1).bias(false)),
                            torch::nn::BatchNorm2d(64), torch::nn::ReLU());
  int64_t channels = 64;
  for (int64_t width : {64, 128, 256, 512}) {
    net->push_back(BasicBlock(channels, width, width == 64 ? 1 : 2));
    net->push_back(BasicBlock(width, width, 1));
    channels = width;
  }
  net->push_back(torch::nn::AdaptiveAvgPool2d(1));
  net->push_back(torch::nn::Flatten());
  net->push_back(torch::nn::Linear(512, 10));
  return net;
}

/// The model named "cnn", "mlp" or "resnet", initialised from a fixed seed, so that every
/// loop trains the same weights on the same data and does the same arithmetic; `kernels`: the
/// CNN's and the MLP's layers on est::kernels (the ResNet has none there); `fused`: the CNN's
/// LibTorch layers run by est::kernels::FusedForward.
inline torch::nn::Sequential MakeModel(const std::string& name, bool kernels, bool fused = false) {
  torch::manual_seed(1);
  if (name == "cnn") return MakeCnn(kernels, fused);
  return name == "resnet" ? MakeResNet18() : MakeMlp(kernels);
}

/// Up to `count` batches of `batch_size` examples, stacked: inputs [n, batch_size, ...] and
/// labels [n, batch_size]; callers cycle through the n batches. The CNN gets the first
/// Fashion-MNIST training images (scaled to [0, 1]) and their labels, as many whole batches
/// as the 60 000 images hold; the MLP and the ResNet get `count` batches of normal noise
/// (seed 7, 1024 values or 3×32×32 images) and random labels.
inline std::pair<torch::Tensor, torch::Tensor> MakeBatches(const std::string& model, int64_t batch_size,
                                                           int64_t count) {
  if (model == "cnn") {
    const std::string dir = est_apps::kFashionMnistDir;
    torch::Tensor images = est::data::ReadIdx(dir + "/train-images-idx3-ubyte.gz");
    torch::Tensor labels = est::data::ReadIdx(dir + "/train-labels-idx1-ubyte.gz");
    if (images.size(0) < batch_size)
      throw std::invalid_argument("--batch-size " + std::to_string(batch_size) + " is more than the " +
                                  std::to_string(images.size(0)) + " Fashion-MNIST images in " + dir);
    count = std::min(count, images.size(0) / batch_size);
    const int64_t examples = batch_size * count;
    images = images.slice(0, 0, examples).to(torch::kFloat32).div_(255.0);
    return {images.reshape({count, batch_size, 1, 28, 28}).contiguous(),
            labels.slice(0, 0, examples).to(torch::kLong).reshape({count, batch_size}).contiguous()};
  }
  torch::manual_seed(7);
  const std::vector<int64_t> example = model == "resnet" ? std::vector<int64_t>{3, 32, 32} : std::vector<int64_t>{1024};
  std::vector<int64_t> shape = {count, batch_size};
  shape.insert(shape.end(), example.begin(), example.end());
  return {torch::randn(shape), torch::randint(0, 10, {count, batch_size})};
}

}  // namespace est_bench
