// Training with ParameterServerStrategy against ps tasks in this process: one worker with one
// or two ps tasks (a partitioned variable) equals local training to the last bit, with SGD
// with momentum, with Adam, with Adagrad and Adam as two optimizers, and with FTRL and Adagrad
// as TensorFlow's wide-and-deep model trains; the checkpoint it writes continues in local
// training exactly.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include "distribute/cluster/cluster_config.h"
#include "distribute/optimizer/ftrl.h"
#include "tests/estimator/canned/canned_test_data.h"
#include "distribute/parameter_server/variable_server.h"
#include "distribute/parameter_server/variable_service.pb.h"
#include "distribute/parameter_server_strategy.h"
#include "estimator/estimator.h"
#include "estimator/hooks/session_run_hook.h"
#include "estimator/moving_average.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/test_models.h"
#include "tests/estimator/worker_threads.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

namespace est {
namespace {

// x (2) -> 64 -> tanh -> 64 -> tanh -> 1, with the optimizer params["optimizer"] names
// ("adagrad+adam": Adagrad for the first layer, Adam for the others; "ftrl+adagrad": FTRL for
// the first layer, Adagrad as Keras's for the others).
EstimatorSpec MlpModelFn(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto net = ctx.module("mlp", [] {
    return torch::nn::Sequential(torch::nn::Linear(2, 64), torch::nn::Tanh(), torch::nn::Linear(64, 64),
                                 torch::nn::Tanh(), torch::nn::Linear(64, 1));
  });
  auto predictions = net->forward(features.at("x")).squeeze(1);
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss, {});
  if (ctx.params().value("optimizer", "sgd") == "adagrad+adam") {
    auto& adagrad = ctx.optimizer("adagrad", [&] { return torch::optim::Adagrad(net->ptr(0)->parameters(), 0.05); });
    auto& adam = ctx.optimizer("adam", [&] {
      std::vector<at::Tensor> rest = net->ptr(2)->parameters();
      for (const auto& parameter : net->ptr(4)->parameters()) rest.push_back(parameter);
      return torch::optim::Adam(rest, 1e-2);
    });
    return EstimatorSpec::Train(loss, {adagrad, adam});
  }
  if (ctx.params().value("optimizer", "sgd") == "ftrl+adagrad") {
    auto& ftrl = ctx.optimizer("ftrl", [&] {
      return optim::Ftrl(net->ptr(0)->parameters(),
                         optim::FtrlOptions(0.05).l1(1e-3).l2(1e-3).l2_shrinkage(1e-3).sparse_rows(true));
    });
    auto& adagrad = ctx.optimizer("adagrad", [&] {
      std::vector<at::Tensor> rest = net->ptr(2)->parameters();
      for (const auto& parameter : net->ptr(4)->parameters()) rest.push_back(parameter);
      return torch::optim::Adagrad(rest, torch::optim::AdagradOptions(0.05).initial_accumulator_value(0.1).eps(1e-7));
    });
    return EstimatorSpec::Train(loss, {ftrl, adagrad});
  }
  if (ctx.params().value("optimizer", "sgd") == "adam") {
    auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(net->parameters(), 1e-2); });
    return EstimatorSpec::Train(loss, adam);
  }
  auto& sgd = ctx.optimizer("sgd", [&] {
    return torch::optim::SGD(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
  });
  return EstimatorSpec::Train(loss, sgd);
}

// ps tasks served in this process, and the cluster of a chief and `workers` - 1 workers with them.
struct InProcessPs {
  explicit InProcessPs(int count, int workers = 1) {
    std::string addresses;
    for (int task = 0; task < count; ++task) {
      distribute::VariableServiceOptions options;
      options.task = task;
      options.job_id = "ps-equivalence";
      servers.push_back(distribute::VariableServer::Start(options));
      addresses += std::string(task == 0 ? "" : ", ") + "\"127.0.0.1:" + std::to_string(servers.back()->port()) + "\"";
    }
    std::string worker_addresses;
    for (int worker = 1; worker < workers; ++worker)
      worker_addresses += std::string(worker == 1 ? "" : ", ") + "\"127.0.0.1:" + std::to_string(1 + worker) + "\"";
    cluster_spec = R"("chief": ["127.0.0.1:1"], )" +
                   (workers > 1 ? R"("worker": [)" + worker_addresses + "], " : std::string()) + R"("ps": [)" +
                   addresses + "]";
  }
  // The cluster as training task `rank` sees it (0: the chief).
  distribute::ClusterConfig cluster(int rank = 0) const {
    const std::string task = rank == 0 ? R"("chief", "index": 0)" : R"("worker", "index": )" + std::to_string(rank - 1);
    return distribute::ParseTfConfig("{\"cluster\": {" + cluster_spec + "}, \"task\": {\"type\": " + task + "}}");
  }
  std::shared_ptr<distribute::ParameterServerStrategy> strategy(
      int64_t min_shard_bytes = 256 << 10, int rank = 0,
      distribute::ParameterServerOptions options = distribute::ParameterServerOptions()) const {
    return distribute::ParameterServerStrategy::Create(
        options.cluster(cluster(rank)).job_id("ps-equivalence").timeout_secs(20).placement(
            distribute::PlacementOptions().min_shard_bytes(min_shard_bytes)));
  }
  // Describe of ps task `task`.
  ps::DescribeReply describe(int task) const {
    distribute::VariableServiceOptions options;
    options.task = task;
    options.port = servers[static_cast<size_t>(task)]->port();
    options.job_id = "ps-equivalence";
    return distribute::VariableClient(options).describe_task();
  }
  std::vector<std::unique_ptr<distribute::VariableServer>> servers;
  std::string cluster_spec;
};

// Runs `worker(rank)` on `world` threads and waits for them.
template <typename Worker>
void RunThreads(int world, Worker worker) {
  std::vector<std::future<void>> workers;
  for (int rank = 0; rank < world; ++rank) workers.push_back(std::async(std::launch::async, worker, rank));
  for (auto& w : workers) w.get();
}

// Sleeps after every step: a straggler.
class SlowStepHook : public SessionRunHook {
 public:
  explicit SlowStepHook(std::chrono::milliseconds sleep) : sleep_(sleep) {}
  void after_run(RunContext&, const RunValues&) override { std::this_thread::sleep_for(sleep_); }

 private:
  std::chrono::milliseconds sleep_;
};

// A RunConfig with `strategy` (and a ParameterServerStrategy's cluster: the Estimator checks
// that both agree), seeded, saving every `save_steps` and logging seldom.
RunConfig SeededConfig(std::shared_ptr<distribute::Strategy> strategy, int seed, int64_t save_steps) {
  RunConfig config;
  if (auto ps = std::dynamic_pointer_cast<distribute::ParameterServerStrategy>(strategy)) config.cluster = ps->cluster();
  config.tf_random_seed = seed;
  config.save_checkpoints_steps = save_steps;
  config.log_step_count_steps = 1000;
  config.train_distribute = std::move(strategy);
  return config;
}

Estimator MakeEstimator(const std::string& dir, const std::string& optimizer,
                        std::shared_ptr<distribute::Strategy> strategy) {
  return Estimator(MlpModelFn, dir, SeededConfig(std::move(strategy), 11, 10), nlohmann::json{{"optimizer", optimizer}});
}

void CheckBitEqual(const Estimator& a, const Estimator& b) {
  CHECK(a.get_variable_value("global_step").item<int64_t>() == b.get_variable_value("global_step").item<int64_t>());
  for (const auto& name : a.get_variable_names()) {
    INFO("variable " << name << " differs by up to "
                     << (a.get_variable_value(name).to(torch::kDouble) - b.get_variable_value(name).to(torch::kDouble))
                            .abs()
                            .max()
                            .item<double>());
    CHECK(torch::equal(a.get_variable_value(name), b.get_variable_value(name)));
  }
}

}  // namespace

TEST_CASE("one worker with ps tasks trains exactly as local training", "[estimator][ps]") {
  for (const std::string optimizer : {"sgd", "adam", "adagrad+adam", "ftrl+adagrad"}) {
    for (int num_ps : {1, 2}) {
      DYNAMIC_SECTION(optimizer << " with " << num_ps << " ps task(s)") {
        testing::LogCapture log(200);
        const InProcessPs ps(num_ps);
        // With two ps tasks the 64 × 64 weight (16 KiB) is cut in two shards of 32 rows.
        auto strategy = ps.strategy(num_ps == 1 ? 256 << 10 : 4 << 10);
        const std::string tag = optimizer + std::to_string(num_ps);
        Estimator remote = MakeEstimator(testing::FreshTempDir("ps_remote_" + tag).string(), optimizer, strategy);
        Estimator local = MakeEstimator(testing::FreshTempDir("ps_local_" + tag).string(), optimizer, nullptr);
        remote.train(testing::SineInput, TrainOptions().max_steps(30));
        local.train(testing::SineInput, TrainOptions().max_steps(30));
        CHECK(remote.get_variable_value("global_step").item<int64_t>() == 30);
        // The ps tasks step as the chief's RunConfig says: fused where it applies (the default).
        for (int task = 0; task < num_ps; ++task) CHECK(ps.describe(task).rule().fused_optimizer_step());
        // Six variables; with two ps tasks seven shards, balanced by bytes.
        CHECK_THAT(log.text(), Catch::Contains(num_ps == 1 ? "ps 0: 6 shards" : "ps 0: 3 shards, 8.75 KiB; ps 1: 4 shards, 8.5 KiB"));
        {
          INFO("after 30 steps");
          CheckBitEqual(remote, local);
        }
        // The chief finished the job on the ps tasks.
        for (const auto& server : ps.servers) CHECK(server->wait_finished(std::chrono::seconds(5)));

        // The checkpoint, optimizer state and input position included, continues in local
        // training as local training's own does (each in a new Estimator, as a restarted job).
        Estimator resumed = MakeEstimator(remote.model_dir(), optimizer, nullptr);
        Estimator local_resumed = MakeEstimator(local.model_dir(), optimizer, nullptr);
        resumed.train(testing::SineInput, TrainOptions().max_steps(40));
        local_resumed.train(testing::SineInput, TrainOptions().max_steps(40));
        INFO("resumed locally for 10 steps");
        CheckBitEqual(resumed, local_resumed);
      }
    }
  }
}

TEST_CASE("canned wide & deep with its embedding and linear weights sharded over 2 ps tasks trains as unsharded",
          "[estimator][ps][canned]") {
  testing::LogCapture log(200);
  const testing::RuleColumns columns;
  const testing::RuleData data(canned::classifier_parse_example_spec(columns.all(), "clicked"), "clicked", 256, 0);
  const auto input = [&] { return testing::Batches(data.train, 32, /*repeat=*/true); };
  const InProcessPs ps(2);
  // Shards of at most 32 bytes: the [6, 3] embedding table and the linear weights are cut in rows.
  canned::DNNLinearCombinedClassifier remote(testing::RuleWideDeep(columns),
                                             testing::FreshTempDir("ps_canned_remote").string(),
                                             SeededConfig(ps.strategy(32), 11, 10));
  canned::DNNLinearCombinedClassifier local(testing::RuleWideDeep(columns),
                                            testing::FreshTempDir("ps_canned_local").string(),
                                            SeededConfig(nullptr, 11, 10));
  remote.train(input, TrainOptions().max_steps(20));
  local.train(input, TrainOptions().max_steps(20));
  CHECK_THAT(log.text(), Catch::Contains("ps 1:"));
  CheckBitEqual(remote, local);
}

TEST_CASE("one worker with ps tasks keeps the moving averages of local training, and evaluates with them",
          "[estimator][ps][moving_average]") {
  const InProcessPs ps(1);
  const auto averaged = [](std::shared_ptr<distribute::Strategy> strategy) {
    RunConfig config = SeededConfig(std::move(strategy), 11, 10);
    config.moving_average = MovingAverageOptions().decay(0.9).num_updates(true);
    return config;
  };
  Estimator remote(MlpModelFn, testing::FreshTempDir("ps_ema_remote").string(), averaged(ps.strategy()));
  Estimator local(MlpModelFn, testing::FreshTempDir("ps_ema_local").string(), averaged(nullptr));
  remote.train(testing::SineInput, TrainOptions().max_steps(30));
  local.train(testing::SineInput, TrainOptions().max_steps(30));
  const std::vector<std::string> names = remote.get_variable_names();
  CHECK(std::count_if(names.begin(), names.end(), [](const std::string& name) {
          return name.find(kMovingAverageSuffix) != std::string::npos;
        }) == 6);
  CheckBitEqual(remote, local);
  CHECK(Estimator(MlpModelFn, remote.model_dir(), averaged(nullptr)).evaluate(testing::SineInput).at("loss") ==
        local.evaluate(testing::SineInput).at("loss"));
}

TEST_CASE("ps tasks step Adam as the chief's RunConfig::fused_optimizer_step says", "[estimator][ps]") {
  const InProcessPs ps(1);
  RunConfig config = SeededConfig(ps.strategy(), 11, 10);
  config.fused_optimizer_step = false;
  Estimator remote(MlpModelFn, testing::FreshTempDir("ps_unfused").string(), config,
                   nlohmann::json{{"optimizer", "adam"}});
  Estimator local = MakeEstimator(testing::FreshTempDir("ps_unfused_local").string(), "adam", nullptr);
  remote.train(testing::SineInput, TrainOptions().max_steps(5));
  local.train(testing::SineInput, TrainOptions().max_steps(5));
  CHECK_FALSE(ps.describe(0).rule().fused_optimizer_step());
  CheckBitEqual(remote, local);  // LibTorch's Adam::step there, the fused step here: the same bits
}

TEST_CASE("synchronous ps training of 2 workers equals MultiWorkerMirroredStrategy with 2 workers", "[estimator][ps]") {
  auto config = [](std::shared_ptr<distribute::Strategy> strategy) { return SeededConfig(std::move(strategy), 3, 10); };
  auto input = [](Mode mode, const distribute::InputContext& context) {
    return testing::InputOfBatch(mode, context, 32);
  };
  const std::string mirrored_dir = testing::FreshTempDir("ps_sync_mirrored").string();
  testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(testing::SgdRegression, mirrored_dir, config(strategy)).train(input, TrainOptions().max_steps(30));
  });

  const InProcessPs ps(2, /*workers=*/2);
  const std::string ps_dir = testing::FreshTempDir("ps_sync_ps").string();
  std::vector<int> replicas_in_sync(2);  // Catch's assertions are checked on this thread only
  RunThreads(2, [&](int rank) {
    auto strategy = ps.strategy(256 << 10, rank,
                                distribute::ParameterServerOptions().mode(distribute::ParameterServerMode::kSync));
    replicas_in_sync[static_cast<size_t>(rank)] = strategy->num_replicas_in_sync();
    Estimator(testing::SgdRegression, ps_dir, config(strategy)).train(input, TrainOptions().max_steps(30));
  });
  CHECK(replicas_in_sync == std::vector<int>{2, 2});  // each worker batches half of the global 32
  Estimator mirrored(testing::SgdRegression, mirrored_dir, config(nullptr));
  Estimator synchronous(testing::SgdRegression, ps_dir, config(nullptr));
  CHECK(synchronous.get_variable_value("global_step").item<int64_t>() == 30);
  CHECK(testing::MaxRelativeDifference(mirrored, synchronous) <= 1e-5);
  CHECK(ps.describe(0).global_step() == 30);  // one step per aggregated pair of pushes
}

namespace {

// SgdRegression clipping its gradients by value and then by global norm 0.2.
EstimatorSpec ClippedRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  EstimatorSpec spec = testing::SgdRegression(features, labels, mode, ctx);
  if (mode == Mode::kTrain) spec.clip_gradients_by_value(-0.4, 0.3).clip_gradients_by_global_norm(0.2);
  return spec;
}

// The gradient norms the chief wrote to TensorBoard, by step.
std::map<int64_t, double> GradientNorms(const std::string& dir) {
  std::map<int64_t, double> by_step;
  for (const auto& event : ReadScalarEvents(ListEventFiles(dir).at(0)))
    if (event.tag == "global_norm/gradient_norm") by_step[event.step] = event.value;
  return by_step;
}

}  // namespace

TEST_CASE("sync ps training clips the mean of the workers' gradients, as MultiWorkerMirroredStrategy does",
          "[estimator][ps][clipping]") {
  auto config = [](std::shared_ptr<distribute::Strategy> strategy) {
    RunConfig run = SeededConfig(std::move(strategy), 3, 1000);
    run.save_summary_steps = 1;
    return run;
  };
  auto input = [](Mode mode, const distribute::InputContext& context) {
    return testing::InputOfBatch(mode, context, 32);
  };
  constexpr int kSteps = 15;
  const std::string mirrored_dir = testing::FreshTempDir("ps_clip_mirrored").string();
  testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(ClippedRegression, mirrored_dir, config(strategy)).train(input, TrainOptions().max_steps(kSteps));
  });
  Estimator mirrored(ClippedRegression, mirrored_dir, config(nullptr));
  const std::map<int64_t, double> mirrored_norms = GradientNorms(mirrored_dir);
  REQUIRE(mirrored_norms.size() == kSteps);
  // The clipping by global norm scales every step's gradients.
  for (const auto& [step, norm] : mirrored_norms) REQUIRE(norm > 0.2);

  // One ps task applies the step at once; with two (the first layer's weight cut in two
  // shards) each task's part of the norm goes through the workers.
  for (int num_ps : {1, 2}) {
    DYNAMIC_SECTION(num_ps << " ps task(s)") {
      const InProcessPs ps(num_ps, /*workers=*/2);
      const std::string ps_dir = testing::FreshTempDir("ps_clip_" + std::to_string(num_ps)).string();
      RunThreads(2, [&](int rank) {
        auto strategy = ps.strategy(num_ps == 1 ? 256 << 10 : 64, rank,
                                    distribute::ParameterServerOptions().mode(distribute::ParameterServerMode::kSync));
        Estimator(ClippedRegression, ps_dir, config(strategy)).train(input, TrainOptions().max_steps(kSteps));
      });
      Estimator synchronous(ClippedRegression, ps_dir, config(nullptr));
      CHECK(synchronous.get_variable_value("global_step").item<int64_t>() == kSteps);
      CHECK(testing::MaxRelativeDifference(mirrored, synchronous) <= 1e-5);
      // The chief's summary is the norm of the mean gradient (a worker's own would differ).
      const std::map<int64_t, double> norms = GradientNorms(ps_dir);
      REQUIRE(norms.size() == kSteps);
      for (const auto& [step, norm] : mirrored_norms) {
        INFO("step " << step);
        CHECK(norms.at(step) == Approx(norm).epsilon(1e-5));
      }
      for (int task = 0; task < num_ps; ++task) CHECK(ps.describe(task).global_step() == kSteps);
    }
  }
}

TEST_CASE("sync training with a backup worker equals local training and drops only late gradients",
          "[estimator][ps]") {
  // Every worker trains on the same batch, so every applied step is the mean of two equal
  // gradients of the current values: local training's step, to the last bit, whichever two
  // workers' pushes make it.
  auto same_batch = [](Mode, const distribute::InputContext&) {
    auto x = torch::cos(torch::arange(48, torch::kFloat32) * 0.37).reshape({16, 3});
    return data::Dataset::FromTensors({{"x", x}}, x.select(1, 0) * 2 - x.select(1, 1)).repeat().batch(16);
  };
  auto config = [](std::shared_ptr<distribute::Strategy> strategy) { return SeededConfig(std::move(strategy), 5, 1000); };
  const InProcessPs ps(1, /*workers=*/3);
  const std::string dir = testing::FreshTempDir("ps_backup").string();
  RunThreads(3, [&](int rank) {
    auto strategy = ps.strategy(256 << 10, rank,
                                distribute::ParameterServerOptions()
                                    .mode(distribute::ParameterServerMode::kSync)
                                    .replicas_to_aggregate(2)
                                    .total_num_replicas(3));
    // Worker 2 is slowed: its gradients come late most steps.
    std::vector<HookPtr> hooks;
    if (rank == 2) hooks.push_back(std::make_shared<SlowStepHook>(std::chrono::milliseconds(10)));
    Estimator(testing::SgdRegression, dir, config(strategy)).train(same_batch, TrainOptions().max_steps(30).hooks(hooks));
  });
  Estimator local(testing::SgdRegression, testing::FreshTempDir("ps_backup_local").string(), config(nullptr));
  local.train(same_batch, TrainOptions().max_steps(30));
  Estimator synchronous(testing::SgdRegression, dir, config(nullptr));
  CheckBitEqual(synchronous, local);
  // Every push either made one of the 30 steps (two each) or was dropped as late: the
  // workers' input positions count their pushes.
  const ps::DescribeReply described = ps.describe(0);
  int64_t pushes = 0;
  for (const auto& [worker, position] : described.input_positions()) pushes += position;
  CHECK(described.global_step() == 30);
  CHECK(pushes == 2 * 30 + described.dropped_pushes());
}

TEST_CASE("bounded staleness keeps a fast worker within s steps of a straggler", "[estimator][ps]") {
  constexpr int kStaleness = 2;
  const InProcessPs ps(1, /*workers=*/2);
  const std::string dir = testing::FreshTempDir("ps_bounded").string();
  RunThreads(2, [&](int rank) {
    auto strategy = ps.strategy(256 << 10, rank,
                                distribute::ParameterServerOptions()
                                    .mode(distribute::ParameterServerMode::kBoundedStaleness)
                                    .staleness(kStaleness));
    RunConfig config = SeededConfig(strategy, 0, 1000);
    // Worker 1 is slowed: without the bound the chief would take most of the 60 steps.
    std::vector<HookPtr> hooks;
    if (rank == 1) hooks.push_back(std::make_shared<SlowStepHook>(std::chrono::milliseconds(15)));
    Estimator(testing::SgdRegression, dir, config)
        .train([](Mode mode, const distribute::InputContext& context) { return testing::InputOfBatch(mode, context, 8); },
               TrainOptions().max_steps(60).hooks(hooks));
  });
  // The ps's own counter: the most pushes a puller was ahead of the slowest live worker.
  const int64_t staleness = ps.describe(0).max_staleness();
  CHECK(staleness <= kStaleness);
  CHECK(staleness >= 1);  // the bound was reached: the straggler held the chief back
  CHECK(ps.describe(0).global_step() >= 60);
}

TEST_CASE("a ps checkpoint continues with another number of ps tasks exactly", "[estimator][ps]") {
  const std::string dir = testing::FreshTempDir("ps_resize").string();
  {
    const InProcessPs one(1);
    MakeEstimator(dir, "sgd", one.strategy()).train(testing::SineInput, TrainOptions().max_steps(20));
  }
  {
    const InProcessPs two(2);
    MakeEstimator(dir, "sgd", two.strategy(4 << 10)).train(testing::SineInput, TrainOptions().max_steps(30));
  }
  Estimator local = MakeEstimator(testing::FreshTempDir("ps_resize_local").string(), "sgd", nullptr);
  local.train(testing::SineInput, TrainOptions().max_steps(30));
  Estimator resized = MakeEstimator(dir, "sgd", nullptr);
  CheckBitEqual(resized, local);
}

namespace {

// MlpModelFn with an optimizer no ps applies.
EstimatorSpec LbfgsModelFn(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto net = ctx.module("net", [] { return torch::nn::Linear(2, 1); });
  auto loss = torch::mse_loss(net->forward(features.at("x")).squeeze(1), labels);
  auto& lbfgs = ctx.optimizer("lbfgs", [&] { return torch::optim::LBFGS(net->parameters(), torch::optim::LBFGSOptions(1)); });
  return EstimatorSpec::Train(loss, lbfgs);
}

}  // namespace

TEST_CASE("bad parameter-server setups get one clear error each", "[estimator][ps]") {
  using distribute::ParameterServerOptions;
  using distribute::ParameterServerStrategy;
  SECTION("a cluster without a ps job, or with ps tasks but no workers") {
    CHECK_THROWS_MATCHES(
        ParameterServerStrategy(ParameterServerOptions().cluster(distribute::ParseTfConfig(
            R"({"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "chief", "index": 0}})"))),
        ConfigError, testing::MessageMatches(Catch::Contains("TF_CONFIG has no 'ps' job") && Catch::Contains("--ps N")));
    CHECK_THROWS_MATCHES(distribute::ParseTfConfig(R"({"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}})"),
                         ConfigError, testing::MessageMatches(Catch::Contains("training group")));
  }
  SECTION("replicas_to_aggregate beyond the workers") {
    const InProcessPs ps(1, /*workers=*/2);
    CHECK_THROWS_MATCHES(ps.strategy(256 << 10, 0, ParameterServerOptions().replicas_to_aggregate(3)), ConfigError,
                         testing::MessageMatches(Catch::Contains("replicas_to_aggregate is 3, expected 1 to 2")));
  }
  SECTION("an unreachable ps task") {
    uint16_t port = 0;
    {
      const InProcessPs gone(1);
      port = gone.servers.front()->port();
    }
    auto strategy = ParameterServerStrategy::Create(
        ParameterServerOptions()
            .cluster(distribute::ParseTfConfig(R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:)" +
                                               std::to_string(port) + R"("]}, "task": {"type": "chief", "index": 0}})"))
            .timeout_secs(0.5));
    Estimator estimator = MakeEstimator(testing::FreshTempDir("ps_unreachable").string(), "sgd", strategy);
    CHECK_THROWS_MATCHES(estimator.train(testing::SineInput, TrainOptions().max_steps(5)), CommunicationError,
                         testing::MessageMatches(Catch::Contains("ps 0 at 127.0.0.1:" + std::to_string(port)) &&
                                                 Catch::Contains("is the ps task running")));
  }
  SECTION("an optimizer a ps cannot apply") {
    const InProcessPs ps(1);
    RunConfig config = SeededConfig(ps.strategy(), 11, 10);
    Estimator estimator(LbfgsModelFn, testing::FreshTempDir("ps_lbfgs").string(), config);
    CHECK_THROWS_MATCHES(estimator.train(testing::SineInput, TrainOptions().max_steps(5)), ConfigError,
                         testing::MessageMatches(Catch::Contains("'net/weight'") && Catch::Contains("LBFGS")));
  }
  SECTION("a ps task of another job") {
    const InProcessPs ps(1);
    auto strategy = ParameterServerStrategy::Create(
        ParameterServerOptions().cluster(ps.cluster()).job_id("another-job").timeout_secs(5));
    Estimator estimator = MakeEstimator(testing::FreshTempDir("ps_foreign").string(), "sgd", strategy);
    CHECK_THROWS_MATCHES(estimator.train(testing::SineInput, TrainOptions().max_steps(5)), ConfigError,
                         testing::MessageMatches(Catch::Contains("refused by the ps 0 of job 'ps-equivalence'") &&
                                                 Catch::Contains("came from job 'another-job'")));
  }
}

}  // namespace est
