// Training on CUDA devices: the same result as on the CPU, checkpoints that move between
// the two, two GPU replicas, and mixed precision on the GPU. [cuda]: skipped without a GPU.

#include <torch/torch.h>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "distribute/strategy.h"
#include "estimator/estimator.h"
#include "estimator/loss_scaler.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"
#include "tests/torch_cuda_devices.h"

#include <catch2/catch.hpp>

using namespace est;
using est::testing::FreshTempDir;
using est::testing::SineInput;
using est::testing::MaxRelativeDifference;

namespace {

// A 2-16-1 tanh network with Adam on y = sin(x0) + x1 / 2, 128 examples, global batch 32.
EstimatorSpec Mlp(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto net = ctx.module("net", [] {
    return torch::nn::Sequential(torch::nn::Linear(2, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
  });
  auto predictions = net->forward(features.at("x")).squeeze(1).to(at::kFloat);
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss, {});
  auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(net->parameters(), 0.02); });
  return EstimatorSpec::Train(loss, adam);
}

RunConfig Config(std::shared_ptr<distribute::Strategy> strategy, MixedPrecision precision = MixedPrecision::kNone) {
  RunConfig config;
  config.tf_random_seed = 5;
  config.save_checkpoints_steps = 1000;
  config.save_summary_steps = 0;
  config.train_distribute = std::move(strategy);
  config.mixed_precision = precision;
  return config;
}

std::shared_ptr<distribute::Strategy> Gpu() { return distribute::OneDeviceStrategy::Create("cuda:0"); }

}  // namespace

TEST_CASE("training on cuda:0 matches training on the CPU", "[estimator][cuda]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(1);
  Estimator cpu(Mlp, FreshTempDir("gpu_match_cpu").string(), Config(nullptr));
  cpu.train(SineInput, TrainOptions().max_steps(50));
  Estimator gpu(Mlp, FreshTempDir("gpu_match_gpu").string(), Config(Gpu()));
  gpu.train(SineInput, TrainOptions().max_steps(50));
  CHECK(gpu.get_variable_value("global_step").item<int64_t>() == 50);
  CHECK(gpu.get_variable_value("net/0.weight").device().is_cpu());  // checkpoints hold host tensors
  CHECK(MaxRelativeDifference(cpu, gpu) < 1e-4);
  CHECK(gpu.evaluate(SineInput).at("loss") == Approx(cpu.evaluate(SineInput).at("loss")).epsilon(1e-3));
}

TEST_CASE("a checkpoint written on the GPU continues on the CPU, and the reverse", "[estimator][cuda]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(1);
  Estimator straight(Mlp, FreshTempDir("gpu_ckpt_straight").string(), Config(nullptr));
  straight.train(SineInput, TrainOptions().max_steps(40));

  const std::string gpu_then_cpu = FreshTempDir("gpu_ckpt_gpu_cpu").string();
  Estimator(Mlp, gpu_then_cpu, Config(Gpu())).train(SineInput, TrainOptions().max_steps(20));
  Estimator on_cpu(Mlp, gpu_then_cpu, Config(nullptr));
  on_cpu.train(SineInput, TrainOptions().max_steps(40));
  CHECK(MaxRelativeDifference(straight, on_cpu) < 1e-4);

  const std::string cpu_then_gpu = FreshTempDir("gpu_ckpt_cpu_gpu").string();
  Estimator(Mlp, cpu_then_gpu, Config(nullptr)).train(SineInput, TrainOptions().max_steps(20));
  Estimator on_gpu(Mlp, cpu_then_gpu, Config(Gpu()));
  on_gpu.train(SineInput, TrainOptions().max_steps(40));
  CHECK(MaxRelativeDifference(straight, on_gpu) < 1e-4);
}

TEST_CASE("MirroredStrategy with two GPU replicas equals one GPU with the same global batch", "[estimator][cuda]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(2);
  Estimator one(Mlp, FreshTempDir("gpu_mirrored_one").string(), Config(Gpu()));
  one.train(SineInput, TrainOptions().max_steps(30));
  Estimator two(Mlp, FreshTempDir("gpu_mirrored_two").string(),
                Config(distribute::MirroredStrategy::Create({"cuda:0", "cuda:1"})));
  two.train(SineInput, TrainOptions().max_steps(30));
  CHECK(MaxRelativeDifference(one, two) < 1e-4);
}

TEST_CASE("float16 and bfloat16 mixed precision on the GPU learn as float32 does", "[estimator][cuda][mixed_precision]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(1);
  Estimator fp32(Mlp, FreshTempDir("gpu_fp32").string(), Config(Gpu()));
  fp32.train(SineInput, TrainOptions().max_steps(300));
  const double fp32_loss = fp32.evaluate(SineInput).at("loss");
  for (MixedPrecision precision : {MixedPrecision::kFloat16, MixedPrecision::kBFloat16}) {
    INFO(MixedPrecisionName(precision));
    Estimator mixed(Mlp, FreshTempDir("gpu_mixed").string(), Config(Gpu(), precision));
    mixed.train(SineInput, TrainOptions().max_steps(300));
    const double mixed_loss = mixed.evaluate(SineInput).at("loss");
    INFO("loss float32 " << fp32_loss << ", mixed " << mixed_loss);
    CHECK(fp32_loss < 0.001);
    CHECK(mixed_loss < 1.5 * fp32_loss);
    CHECK(mixed.get_variable_value("net/0.weight").scalar_type() == at::kFloat);
    checkpoint::CheckpointReader reader(*checkpoint::LatestCheckpoint(mixed.model_dir()));
    // float16 scales the loss by default (2^15 at first, halved after each overflow).
    CHECK(reader.has_tensor(kLossScaleName) == (precision == MixedPrecision::kFloat16));
    if (precision == MixedPrecision::kFloat16) CHECK(reader.tensor(kLossScaleName).item<double>() >= 1.0);
  }
}
