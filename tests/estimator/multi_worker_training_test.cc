// MultiWorkerMirroredStrategy over a real Gloo collective, with the workers as threads:
// 2 workers × batch B train exactly like 1 worker × batch 2B; only the chief writes.

#include <torch/torch.h>

#include <filesystem>

#include "distribute/collective/gloo/gloo_collective.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "estimator/estimator.h"
#include "estimator/hooks/session_run_hook.h"
#include "estimator/metrics/mean_squared_error.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/canned/canned_test_data.h"
#include "tests/estimator/test_models.h"
#include "tests/estimator/worker_threads.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace multi_worker_training_test {
using namespace est;
namespace fs = std::filesystem;

namespace {

using est::testing::InputOfBatch;
using est::testing::SgdRegression;

data::Dataset Input(Mode mode, const distribute::InputContext& input) { return InputOfBatch(mode, input, 32); }

RunConfig Config(std::shared_ptr<distribute::Strategy> strategy) {
  RunConfig config;
  config.tf_random_seed = 3;
  config.save_checkpoints_steps = 10;
  config.save_summary_steps = 5;
  config.train_distribute = std::move(strategy);
  return config;
}

}  // namespace

TEST_CASE("3 workers reduce an evaluation's totals and read the chief's value through the strategy",
          "[distribute][estimator][multiprocess]") {
  est::testing::RunMultiWorkerThreads(3, [](int rank, std::shared_ptr<distribute::MultiWorkerMirroredStrategy> strategy) {
    std::vector<at::Tensor> sums = {at::tensor({1.5 * (rank + 1), 2.0}, at::kDouble), at::scalar_tensor(rank, at::kLong)};
    strategy->reduce_across_workers(distribute::ReduceOp::kSum, sums);
    CHECK(at::equal(sums[0], at::tensor({9.0, 6.0}, at::kDouble)));  // 1.5 + 3 + 4.5, and 3 x 2
    CHECK(sums[1].item<int64_t>() == 3);
    std::vector<at::Tensor> means = {at::tensor({3.0 * rank, 1.0}, at::kDouble)};
    strategy->reduce_across_workers(distribute::ReduceOp::kMean, means);
    CHECK(at::equal(means[0], at::tensor({3.0, 1.0}, at::kDouble)));
    CHECK(strategy->chief_value(100 + rank) == 100);
  });
}

TEST_CASE("2 workers x batch B train like 1 worker x batch 2B, only the chief writes", "[distribute][estimator][multiprocess]") {
  const std::string single_dir = est::testing::FreshTempDir("mwms_single").string();
  Estimator single(SgdRegression, single_dir, Config(nullptr));
  single.train(Input, TrainOptions().max_steps(30));

  const std::string shared_dir = est::testing::FreshTempDir("mwms_shared").string();
  std::vector<EvalResult> evaluations(2);
  EvalResult chief_alone;
  est::testing::RunMultiWorkerThreads(2, [&](int rank, std::shared_ptr<distribute::Strategy> strategy) {
    REQUIRE(strategy->num_replicas_in_sync() == 2);
    RunConfig config = Config(strategy);
    config.eval_distribute = strategy;
    Estimator estimator(SgdRegression, shared_dir, config);
    estimator.train(Input, TrainOptions().max_steps(30));
    evaluations[static_cast<size_t>(rank)] = estimator.evaluate(Input);  // distributed evaluation
    // Without eval_distribute evaluation is not distributed (as TensorFlow's): the chief may
    // evaluate alone.
    if (rank == 0) chief_alone = Estimator(SgdRegression, shared_dir, Config(strategy)).evaluate(Input);
  });

  Estimator trained(SgdRegression, shared_dir, Config(nullptr));
  CHECK(trained.get_variable_value("global_step").item<int64_t>() == 30);
  CHECK(est::testing::MaxRelativeDifference(single, trained) <= 1e-5);
  // One writer: one event file, checkpoints at 10, 20, 30, and evaluation results written once.
  CHECK(ListEventFiles(shared_dir).size() == 1);
  CHECK(ListEventFiles(shared_dir + "/eval").size() == 1);
  int checkpoints = 0;
  for (const auto& entry : fs::directory_iterator(shared_dir))
    checkpoints += entry.path().extension() == ".index";
  CHECK(checkpoints == 3);
  // Distributed evaluation sums the metric over both workers' halves of the data.
  EvalResult whole = single.evaluate(Input);
  for (const auto& result : evaluations) {
    CHECK(result.at("mse") == Approx(whole.at("mse")).epsilon(1e-4));
    CHECK(result.at("global_step") == 30);
  }
  CHECK(chief_alone.at("mse") == Approx(whole.at("mse")).epsilon(1e-4));
  CHECK(chief_alone.at("global_step") == 30);
}

TEST_CASE("canned wide & deep: 2 workers x batch B train like 1 worker x batch 2B", "[distribute][estimator][canned]") {
  const testing::RuleColumns columns;
  const testing::RuleData data(canned::classifier_parse_example_spec(columns.all(), "clicked"), "clicked", 512, 0);
  const auto input = [&](Mode, const distribute::InputContext& context) {
    return testing::Batches(data.train, context.per_replica_batch_size(32), /*repeat=*/true, context);
  };
  // Workers as threads share LibTorch's random generator, so that each draws its initial values
  // from a stream the other also draws from: both runs warm-start from one checkpoint instead.
  const std::string start_dir = est::testing::FreshTempDir("canned_start").string();
  canned::DNNLinearCombinedClassifier(testing::RuleWideDeep(columns), start_dir, Config(nullptr))
      .train(input, TrainOptions().max_steps(1));
  canned::DNNLinearCombinedClassifier single(testing::RuleWideDeep(columns),
                                             est::testing::FreshTempDir("canned_single").string(), Config(nullptr),
                                             start_dir);
  single.train(input, TrainOptions().max_steps(20));
  const std::string shared_dir = est::testing::FreshTempDir("canned_shared").string();
  est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    canned::DNNLinearCombinedClassifier worker(testing::RuleWideDeep(columns), shared_dir, Config(strategy),
                                               start_dir);
    worker.train(input, TrainOptions().max_steps(20));
  });
  canned::DNNLinearCombinedClassifier trained(testing::RuleWideDeep(columns), shared_dir, Config(nullptr));
  CHECK(trained.get_variable_value("global_step").item<int64_t>() == 20);
  // The embedding table, the FTRL-trained linear weights and the DNN: within float rounding.
  CHECK(est::testing::MaxRelativeDifference(single, trained) <= 1e-5);
}

TEST_CASE("with gradient compression 2 workers train like 1 worker x batch 2B within the type's rounding",
          "[distribute][estimator][multiprocess]") {
  // 30 SGD steps; each step's gradient is rounded to the 16-bit type and error feedback
  // sends what rounding dropped on later steps, but the sum of the two workers' 16-bit
  // values is rounded too, and that is not fed back. The tolerances, relative to each
  // variable's largest value: float16 2 roundings (2 · 2^-11; measured 3.8e-4), bfloat16
  // 8 roundings (8 · 2^-8; measured 2.0e-2). The run is deterministic.
  const std::string single_dir = est::testing::FreshTempDir("compressed_single").string();
  Estimator single(SgdRegression, single_dir, Config(nullptr));
  single.train(Input, TrainOptions().max_steps(30));
  for (const auto& [compression, tolerance] : {std::pair{distribute::GradientCompression::kFloat16, 2 * 0x1p-11},
                                               std::pair{distribute::GradientCompression::kBFloat16, 8 * 0x1p-8}}) {
    INFO(distribute::GradientCompressionName(compression));
    const std::string shared_dir = est::testing::FreshTempDir("compressed_shared").string();
    est::testing::RunMultiWorkerThreads(
        2,
        [&](int, std::shared_ptr<distribute::Strategy> strategy) {
          Estimator(SgdRegression, shared_dir, Config(strategy)).train(Input, TrainOptions().max_steps(30));
        },
        distribute::GradientReducerOptions().compression(compression), /*shared_memory=*/false);
    Estimator trained(SgdRegression, shared_dir, Config(nullptr));
    CHECK(trained.get_variable_value("global_step").item<int64_t>() == 30);
    const double difference = est::testing::MaxRelativeDifference(single, trained);
    CHECK(difference <= tolerance);
    CHECK(difference > 0);  // rounded: the compression was in effect
  }
}

TEST_CASE("with PowerSGD 2 workers learn as well as 1 worker x batch 2B", "[distribute][estimator][multiprocess]") {
  // The first layer (16 x 3) goes as rank-1 factors, the last (1 x 16) as float32. The
  // trajectory is not the uncompressed one, so what is checked is the result: the evaluation
  // MSE after 150 steps within 1.25x of the uncompressed run's (measured: 0.78x).
  const std::string single_dir = est::testing::FreshTempDir("powersgd_single").string();
  Estimator single(SgdRegression, single_dir, Config(nullptr));
  single.train(Input, TrainOptions().max_steps(150));
  const double uncompressed = single.evaluate(Input).at("mse");
  const std::string shared_dir = est::testing::FreshTempDir("powersgd_shared").string();
  est::testing::RunMultiWorkerThreads(
      2,
      [&](int, std::shared_ptr<distribute::Strategy> strategy) {
        Estimator(SgdRegression, shared_dir, Config(strategy)).train(Input, TrainOptions().max_steps(150));
      },
      distribute::GradientReducerOptions()
          .compression(distribute::GradientCompression::kPowerSgd)
          .power_sgd(distribute::PowerSgdOptions().rank(1)),
      /*shared_memory=*/false);
  Estimator trained(SgdRegression, shared_dir, Config(nullptr));
  CHECK(trained.get_variable_value("global_step").item<int64_t>() == 150);
  CHECK(est::testing::MaxRelativeDifference(single, trained) > 1e-3);  // compressed: another trajectory
  const double compressed = trained.evaluate(Input).at("mse");
  CHECK(compressed <= 1.25 * uncompressed);
}

TEST_CASE("a restarted multi-worker job resumes from the chief's checkpoint", "[distribute][estimator][multiprocess]") {
  const std::string dir = est::testing::FreshTempDir("mwms_resume").string();
  est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(SgdRegression, dir, Config(strategy)).train(Input, TrainOptions().max_steps(20));
  });
  est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(SgdRegression, dir, Config(strategy)).train(Input, TrainOptions().max_steps(30));
  });
  const std::string straight_dir = est::testing::FreshTempDir("mwms_straight").string();
  est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(SgdRegression, straight_dir, Config(strategy)).train(Input, TrainOptions().max_steps(30));
  });
  Estimator resumed(SgdRegression, dir, Config(nullptr));
  Estimator straight(SgdRegression, straight_dir, Config(nullptr));
  CHECK(resumed.get_variable_value("global_step").item<int64_t>() == 30);
  for (const auto& name : straight.get_variable_names()) {
    INFO(name);
    CHECK(torch::allclose(resumed.get_variable_value(name), straight.get_variable_value(name), 1e-6, 1e-7));
  }
}

TEST_CASE("gradient accumulation: 2 workers x 2 micro-batches of 8 train like 1 worker x batch 32", "[distribute][estimator][multiprocess]") {
  const std::string single_dir = est::testing::FreshTempDir("accumulate_single").string();
  Estimator single(SgdRegression, single_dir, Config(nullptr));
  single.train(Input, TrainOptions().max_steps(30));

  auto micro_batches_of_16 = [](Mode mode, const distribute::InputContext& input) {
    return InputOfBatch(mode, input, 16);
  };
  const std::string local_dir = est::testing::FreshTempDir("accumulate_local").string();
  RunConfig local_config = Config(nullptr);
  local_config.gradient_accumulation_steps = 2;
  Estimator local(SgdRegression, local_dir, local_config);
  local.train(micro_batches_of_16, TrainOptions().max_steps(30));
  CHECK(local.get_variable_value("global_step").item<int64_t>() == 30);
  CHECK(est::testing::MaxRelativeDifference(single, local) <= 1e-5);

  const std::string shared_dir = est::testing::FreshTempDir("accumulate_shared").string();
  est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    RunConfig config = Config(strategy);
    config.gradient_accumulation_steps = 2;
    Estimator estimator(SgdRegression, shared_dir, config);
    estimator.train(micro_batches_of_16, TrainOptions().max_steps(30));
  });
  Estimator trained(SgdRegression, shared_dir, Config(nullptr));
  CHECK(trained.get_variable_value("global_step").item<int64_t>() == 30);
  CHECK(est::testing::MaxRelativeDifference(single, trained) <= 1e-5);
}

TEST_CASE("a job restored with another number of workers reads its logical input shards on exactly, to the bit",
          "[distribute][estimator][multiprocess]") {
  // The input is 2 logical shards (one per worker of the first run). 2 workers to step 10, 1
  // worker to 20 (both shards, one micro-batch each), 2 workers to 30: every step's gradient is
  // the mean of the same two batches as in 1 worker's uninterrupted run over both shards, and
  // a sum of two floats does not depend on their order, so the variables are equal to the bit.
  const std::string straight_dir = est::testing::FreshTempDir("shards_straight").string();
  RunConfig straight_config = Config(nullptr);
  straight_config.logical_input_shards = 2;
  Estimator straight(SgdRegression, straight_dir, straight_config);
  straight.train(Input, TrainOptions().max_steps(30));

  const std::string dir = est::testing::FreshTempDir("shards_changing").string();
  const auto two_workers = [&](int64_t max_steps) {
    est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
      Estimator(SgdRegression, dir, Config(strategy)).train(Input, TrainOptions().max_steps(max_steps));
    });
  };
  two_workers(10);
  Estimator(SgdRegression, dir, Config(nullptr)).train(Input, TrainOptions().max_steps(20));
  two_workers(30);
  Estimator changing(SgdRegression, dir, Config(nullptr));
  CHECK(changing.get_variable_value("global_step").item<int64_t>() == 30);
  CHECK(est::testing::MaxRelativeDifference(straight, changing) == 0);
  // Without the shards a lone worker would read the whole input with its own batch: not the same.
  const std::string alone_dir = est::testing::FreshTempDir("shards_alone").string();
  Estimator alone(SgdRegression, alone_dir, Config(nullptr));
  alone.train(Input, TrainOptions().max_steps(30));
  CHECK(est::testing::MaxRelativeDifference(straight, alone) > 0);
}

TEST_CASE("3 logical shards on 2 workers, held unevenly, train like 1 worker reading all 3",
          "[distribute][estimator][multiprocess]") {
  // Worker 0 reads shards 0 and 2, worker 1 shard 1; the gradient is the mean over the 3
  // batches, summed in another order than 1 worker's (float32 rounding: within 1e-6).
  const auto input = [](Mode mode, const distribute::InputContext& context) { return InputOfBatch(mode, context, 48); };
  RunConfig single_config = Config(nullptr);
  single_config.logical_input_shards = 3;
  Estimator single(SgdRegression, est::testing::FreshTempDir("shards_3_single").string(), single_config);
  single.train(input, TrainOptions().max_steps(20));
  const std::string shared_dir = est::testing::FreshTempDir("shards_3_shared").string();
  est::testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    RunConfig config = Config(strategy);
    config.logical_input_shards = 3;
    Estimator(SgdRegression, shared_dir, config).train(input, TrainOptions().max_steps(20));
  });
  Estimator trained(SgdRegression, shared_dir, Config(nullptr));
  CHECK(trained.get_variable_value("global_step").item<int64_t>() == 20);
  CHECK(est::testing::MaxRelativeDifference(single, trained) <= 1e-6);
  // 4 workers cannot share 3 shards.
  RunConfig too_few = Config(nullptr);
  too_few.logical_input_shards = 3;
  est::testing::RunMultiWorkerThreads(4, [&](int rank, std::shared_ptr<distribute::Strategy> strategy) {
    RunConfig config = too_few;
    config.train_distribute = strategy;
    Estimator estimator(SgdRegression, est::testing::FreshTempDir("shards_3_of_4_" + std::to_string(rank)).string(),
                        config);
    CHECK_THROWS_WITH(estimator.train(input, TrainOptions().max_steps(2)),
                      Catch::Contains("3 logical shards, fewer than the 4 workers"));
  });
}

TEST_CASE("when one worker's input ends first, every worker stops after the same step", "[distribute][estimator][multiprocess]") {
  const std::string shared_dir = est::testing::FreshTempDir("mwms_input_ends").string();
  std::vector<int64_t> final_steps(2);
  est::testing::RunMultiWorkerThreads(2, [&](int rank, std::shared_ptr<distribute::Strategy> strategy) {
    // Worker 0 has 3 batches of 16, worker 1 only 2: training stops everywhere after step 2.
    auto input_fn = [](Mode mode, const distribute::InputContext& input) {
      return Input(mode, input).take(input.input_pipeline_id() == 0 ? 3 : 2);
    };
    Estimator estimator(SgdRegression, shared_dir, Config(strategy));
    estimator.train(input_fn, TrainOptions().max_steps(30));
    final_steps[static_cast<size_t>(rank)] = estimator.get_variable_value("global_step").item<int64_t>();
  });
  CHECK(final_steps == std::vector<int64_t>{2, 2});
}

TEST_CASE("2 workers keep BatchNorm's running statistics equal, broadcast or averaged, the checkpoint holds the chief's",
          "[distribute][estimator][multiprocess]") {
  for (auto sync : {distribute::BufferSync::kBroadcast, distribute::BufferSync::kAverage, distribute::BufferSync::kNone}) {
    INFO("buffer sync " << distribute::BufferSyncName(sync));
    const std::string dir = est::testing::FreshTempDir("mwms_buffers").string();
    std::vector<std::vector<at::Tensor>> buffers(2);  // by worker
    auto store = distribute::CreateInMemoryStore();
    std::vector<std::future<void>> workers;
    for (int rank = 0; rank < 2; ++rank) {
      workers.push_back(std::async(std::launch::async, [&, rank] {
        distribute::RendezvousOptions options;
        options.job_id = "multi_worker_buffers_" + std::string(distribute::BufferSyncName(sync));
        options.rank = rank;
        options.world_size = 2;
        options.timeout = std::chrono::seconds(30);
        std::shared_ptr<distribute::Collective> collective =
            distribute::CreateGlooCollective(distribute::Rendezvous(store, options), rank, 2, {});
        auto strategy = distribute::MultiWorkerMirroredStrategy::CreateWithCollective(collective, {"cpu"}, sync);
        auto model_fn = [&buffers, rank](const Features& features, const at::Tensor& labels, Mode, ModelContext& ctx) {
          auto net = ctx.module("net", [] {
            return torch::nn::Sequential(torch::nn::Linear(3, 4), torch::nn::BatchNorm1d(4), torch::nn::Linear(4, 1));
          });
          if (buffers[static_cast<size_t>(rank)].empty()) buffers[static_cast<size_t>(rank)] = ctx.buffers();
          auto loss = torch::mse_loss(net->forward(features.at("x")).squeeze(1), labels);
          auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), 0.05); });
          return EstimatorSpec::Train(loss, sgd);
        };
        Estimator(model_fn, dir, Config(strategy)).train(Input, TrainOptions().max_steps(6));
      }));
    }
    for (auto& worker : workers) worker.get();
    REQUIRE(buffers[0].size() == 3);
    const bool equal = at::equal(buffers[0][0], buffers[1][0]) && at::equal(buffers[0][1], buffers[1][1]);
    CHECK(equal == (sync != distribute::BufferSync::kNone));
    Estimator saved([](const Features&, const at::Tensor&, Mode, ModelContext&) -> EstimatorSpec {
      throw std::logic_error("not called");
    }, dir, Config(nullptr));
    CHECK(at::equal(saved.get_variable_value("net/1.running_mean"), buffers[0][0]));
  }
}

TEST_CASE("the Estimator hands RunConfig's cluster to a strategy made without one, and refuses another",
          "[distribute][estimator]") {
  const distribute::ClusterSpec spec = {{"chief", {"127.0.0.1:9"}}, {"worker", {"127.0.0.1:10"}}};
  const std::string dir = est::testing::FreshTempDir("mwms_configure").string();
  auto strategy = distribute::MultiWorkerMirroredStrategy::Create();
  RunConfig config = Config(strategy);
  config.cluster = distribute::MakeClusterConfig(spec, "worker", 0, "explicit");
  Estimator estimator(SgdRegression, dir, config);  // connects nothing before training
  CHECK(strategy->num_workers() == 2);
  CHECK(strategy->worker_index() == 1);
  CHECK_FALSE(strategy->is_chief());

  auto own = distribute::MultiWorkerMirroredStrategy::Create(
      distribute::MultiWorkerOptions().cluster(distribute::MakeClusterConfig(spec, "chief", 0, "explicit")));
  RunConfig other = Config(own);
  other.cluster = config.cluster;
  CHECK_THROWS_MATCHES(Estimator(SgdRegression, dir, other), ConfigError,
                       est::testing::MessageMatches(Catch::Contains("the cluster of MultiWorkerOptions is task chief 0") &&
                                                    Catch::Contains("but RunConfig::cluster is task worker 0")));
}

// Requests a stop once the global step reaches `step`.
class StopAtHook : public SessionRunHook {
 public:
  explicit StopAtHook(int64_t step) : step_(step) {}
  void after_run(RunContext& context, const RunValues&) override {
    if (context.session().global_step() >= step_) context.request_stop();
  }

 private:
  int64_t step_;
};

TEST_CASE("a hook of one worker that requests a stop stops every worker after the next step, none waiting",
          "[distribute][estimator]") {
  const std::string dir = est::testing::FreshTempDir("mwms_hook_stop").string();
  std::vector<int64_t> last_steps(2);
  est::testing::RunMultiWorkerThreads(2, [&](int rank, std::shared_ptr<distribute::Strategy> strategy) {
    std::vector<HookPtr> hooks;
    if (rank == 1) hooks.push_back(std::make_shared<StopAtHook>(3));  // worker 1 alone asks, after step 3
    Estimator estimator(SgdRegression, dir, Config(strategy));
    const auto started = std::chrono::steady_clock::now();
    estimator.train(Input, TrainOptions().max_steps(30).hooks(hooks));
    // Without the agreement, the chief would wait for worker 1 until the collective's timeout (30 s).
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
    last_steps[static_cast<size_t>(rank)] = estimator.get_variable_value("global_step").item<int64_t>();
  });
  CHECK(last_steps == std::vector<int64_t>{4, 4});  // the chief saved at step 4, where both stopped
}

}  // namespace multi_worker_training_test
