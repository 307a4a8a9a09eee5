// RunConfig::channels_last: replicas lay out 4-D parameters and images channels-last, train
// like contiguous replicas within rounding, write the same checkpoints, and keep the
// N-worker equivalence.

#include <torch/torch.h>

#include <atomic>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "distribute/strategy.h"
#include "estimator/channels_last.h"
#include "estimator/estimator.h"
#include "tests/estimator/test_models.h"
#include "tests/estimator/worker_threads.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

using namespace est;
using est::testing::MaxRelativeDifference;

namespace {

// Different kernels add in different orders (oneDNN's NHWC convolution, LibTorch's NCHW
// one); 20 SGD steps of this model stay this close.
constexpr double kLayoutTolerance = 1e-5;

data::Dataset Images(Mode mode, const distribute::InputContext& input) {
  return est::testing::ImagesOfBatch(mode, input, 16);
}

RunConfig Config(ChannelsLast channels_last, std::shared_ptr<distribute::Strategy> strategy = nullptr) {
  RunConfig config;
  config.tf_random_seed = 5;
  config.save_checkpoints_steps = 10;
  config.save_summary_steps = 0;
  config.channels_last = channels_last;
  config.train_distribute = std::move(strategy);
  return config;
}

// What model_fn saw in training: its input and its conv weight laid out channels-last, each
// call; and the last conv weight, to compare with the checkpoint.
struct Seen {
  std::atomic<int> calls{0};
  std::atomic<int> channels_last_images{0};
  std::atomic<int> channels_last_weights{0};
  at::Tensor weight;
};

ModelFn Observed(Seen& seen) {
  return [&seen](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    EstimatorSpec spec = est::testing::SgdConvRegression(features, labels, mode, ctx);
    if (mode == Mode::kTrain) {
      const at::Tensor weight = ctx.variables().front().second;  // net/0.weight
      ++seen.calls;
      seen.channels_last_images += !features.at("image").is_contiguous();
      seen.channels_last_weights += !weight.is_contiguous() && weight.is_contiguous(at::MemoryFormat::ChannelsLast);
      seen.weight = weight;
    }
    return spec;
  };
}

}  // namespace

TEST_CASE("channels-last is on for CUDA replicas by default and as asked otherwise", "[estimator]") {
  CHECK_FALSE(UsesChannelsLast(ChannelsLast::kAuto, c10::Device("cpu")));
  CHECK(UsesChannelsLast(ChannelsLast::kAuto, c10::Device("cuda:0")));
  CHECK(UsesChannelsLast(ChannelsLast::kOn, c10::Device("cpu")));
  CHECK_FALSE(UsesChannelsLast(ChannelsLast::kOff, c10::Device("cuda:1")));
  CHECK(ParseChannelsLast(ChannelsLastName(ChannelsLast::kOn)) == ChannelsLast::kOn);
  CHECK_THROWS_MATCHES(ParseChannelsLast("nhwc"), ConfigError,
                       Catch::Message("unknown channels-last setting 'nhwc'; expected auto, on or off"));
  CHECK(RunConfig().channels_last == ChannelsLast::kAuto);
}

TEST_CASE("channels-last training equals contiguous training within rounding, with the same checkpoints",
          "[estimator]") {
  Seen contiguous_seen, channels_last_seen;
  Estimator contiguous(Observed(contiguous_seen), est::testing::FreshTempDir("layout_contiguous").string(),
                       Config(ChannelsLast::kOff));
  contiguous.train(Images, TrainOptions().max_steps(20));
  const std::string dir = est::testing::FreshTempDir("layout_channels_last").string();
  Estimator channels_last(Observed(channels_last_seen), dir, Config(ChannelsLast::kOn));
  channels_last.train(Images, TrainOptions().max_steps(20));

  // Every training call of the channels-last run saw both laid out channels-last; none of the other's.
  CHECK(channels_last_seen.calls == 20);
  CHECK(channels_last_seen.channels_last_images == 20);
  CHECK(channels_last_seen.channels_last_weights == 20);
  CHECK(contiguous_seen.channels_last_images == 0);
  CHECK(contiguous_seen.channels_last_weights == 0);

  const double difference = MaxRelativeDifference(contiguous, channels_last);
  CHECK(difference <= kLayoutTolerance);
  // The checkpoint holds the same names and shapes, and the live weight's values to the bit.
  CHECK(contiguous.get_variable_names() == channels_last.get_variable_names());
  const at::Tensor saved = channels_last.get_variable_value("net/0.weight");
  CHECK(saved.sizes() == channels_last_seen.weight.sizes());
  CHECK(torch::equal(saved, channels_last_seen.weight));
}

TEST_CASE("checkpoints interchange between channels-last and contiguous runs", "[estimator]") {
  Estimator reference(est::testing::SgdConvRegression, est::testing::FreshTempDir("layout_reference").string(),
                      Config(ChannelsLast::kOff));
  reference.train(Images, TrainOptions().max_steps(20));
  for (const auto& [first, second] : {std::pair{ChannelsLast::kOn, ChannelsLast::kOff},
                                     std::pair{ChannelsLast::kOff, ChannelsLast::kOn}}) {
    INFO("steps 1-10 " << ChannelsLastName(first) << ", steps 11-20 " << ChannelsLastName(second));
    const std::string dir = est::testing::FreshTempDir("layout_switch").string();
    Estimator(est::testing::SgdConvRegression, dir, Config(first)).train(Images, TrainOptions().max_steps(10));
    Estimator resumed(est::testing::SgdConvRegression, dir, Config(second));
    // The step-10 values, as the other layout wrote them, before any step of this one.
    const at::Tensor at_10 = resumed.get_variable_value("net/0.weight");
    resumed.train(Images, TrainOptions().max_steps(20));
    CHECK(resumed.get_variable_value("global_step").item<int64_t>() == 20);
    CHECK_FALSE(torch::equal(resumed.get_variable_value("net/0.weight"), at_10));
    CHECK(MaxRelativeDifference(reference, resumed) <= kLayoutTolerance);
  }
}

TEST_CASE("with channels-last 2 workers train like 1 worker with the same global batch",
          "[distribute][estimator][multiprocess]") {
  Estimator single(est::testing::SgdConvRegression, est::testing::FreshTempDir("layout_single").string(),
                   Config(ChannelsLast::kOn));
  single.train(Images, TrainOptions().max_steps(20));
  const std::string shared_dir = est::testing::FreshTempDir("layout_workers").string();
  est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(est::testing::SgdConvRegression, shared_dir, Config(ChannelsLast::kOn, strategy))
        .train(Images, TrainOptions().max_steps(20));
  });
  Estimator trained(est::testing::SgdConvRegression, shared_dir, Config(ChannelsLast::kOff));
  CHECK(trained.get_variable_value("global_step").item<int64_t>() == 20);
  CHECK(MaxRelativeDifference(single, trained) <= 1e-5);

  // And MirroredStrategy's 2 replicas in one process.
  auto mirrored = distribute::MirroredStrategy::Create({"cpu", "cpu"});
  Estimator two(est::testing::SgdConvRegression, est::testing::FreshTempDir("layout_mirrored").string(),
                Config(ChannelsLast::kOn, mirrored));
  two.train(Images, TrainOptions().max_steps(20));
  CHECK(MaxRelativeDifference(single, two) <= 1e-5);
}
