// End to end: train, checkpoint, restart, resume, evaluate, predict.

#include "estimator/estimator.h"

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>

#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/test_models.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

using namespace est;
using est::testing::FreshTempDir;
using est::testing::RegressionData;
using est::testing::RegressionModelFn;
namespace fs = std::filesystem;

namespace {

RunConfig TestConfig() {
  RunConfig config;
  config.tf_random_seed = 1;
  config.save_checkpoints_steps = 10;
  config.save_summary_steps = 5;
  config.log_step_count_steps = 5;
  return config;
}

InputFn TrainInput(int64_t batch = 16) {
  return [batch] { return RegressionData(batch, /*repeat=*/true); };
}

InputFn EvalInput() {
  return [] { return RegressionData(16, /*repeat=*/false, std::nullopt); };
}

void CheckSameVariables(const Estimator& a, const Estimator& b, double tolerance = 0) {
  auto names = a.get_variable_names();
  REQUIRE(names == b.get_variable_names());
  for (const auto& name : names) {
    INFO("variable " << name);
    auto x = a.get_variable_value(name).to(torch::kDouble);
    auto y = b.get_variable_value(name).to(torch::kDouble);
    CHECK((x - y).abs().max().item<double>() <= tolerance * (1 + x.abs().max().item<double>()));
  }
}

}  // namespace

TEST_CASE("train, checkpoint, restart, resume, evaluate, predict", "[estimator][e2e]") {
  const std::string dir = FreshTempDir("estimator_e2e").string();
  {
    Estimator first(RegressionModelFn, dir, TestConfig());
    first.train(TrainInput(), TrainOptions().max_steps(20));
    REQUIRE(first.latest_checkpoint() == dir + "/model.ckpt-20");
    CHECK(first.get_variable_value("global_step").item<int64_t>() == 20);
    auto names = first.get_variable_names();
    CHECK(std::find(names.begin(), names.end(), "linear/weight") != names.end());
    CHECK(std::find(names.begin(), names.end(), "linear/bias") != names.end());
  }
  auto state = checkpoint::ReadCheckpointState(dir);
  REQUIRE(state.has_value());
  CHECK(state->all_model_checkpoint_paths == std::vector<std::string>{dir + "/model.ckpt-10", dir + "/model.ckpt-20"});

  // A new Estimator on the same model_dir resumes: max_steps already reached is a no-op.
  Estimator resumed(RegressionModelFn, dir, TestConfig());
  const auto weight_at_20 = resumed.get_variable_value("linear/weight");
  resumed.train(TrainInput(), TrainOptions().max_steps(20));
  CHECK(resumed.latest_checkpoint() == dir + "/model.ckpt-20");
  CHECK(torch::equal(resumed.get_variable_value("linear/weight"), weight_at_20));
  resumed.train(TrainInput(), TrainOptions().max_steps(40));
  CHECK(resumed.latest_checkpoint() == dir + "/model.ckpt-40");

  // Resuming is exact: same parameters as 40 uninterrupted steps (optimizer state and
  // input position are part of the checkpoint).
  const std::string straight_dir = FreshTempDir("estimator_e2e_straight").string();
  Estimator straight(RegressionModelFn, straight_dir, TestConfig());
  straight.train(TrainInput(), TrainOptions().max_steps(40));
  CheckSameVariables(resumed, straight);

  // Evaluate: loss is the mean batch loss, the metric streams over all examples.
  EvalResult result = resumed.evaluate(EvalInput());
  CHECK(result.at("global_step") == 40);
  CHECK(result.at("loss") == Approx(result.at("mse")).epsilon(1e-5));
  auto history = ReadEvalMetrics(resumed.eval_dir());
  REQUIRE(history.count(40) == 1);
  CHECK(history.at(40).at("mse") == Approx(result.at("mse")).epsilon(1e-6));

  // Training reduced the loss compared with the initial model.
  const std::string untrained_dir = FreshTempDir("estimator_e2e_untrained").string();
  Estimator untrained(RegressionModelFn, untrained_dir, TestConfig());
  EvalResult initial = untrained.evaluate(EvalInput());
  CHECK(initial.at("global_step") == 0);
  CHECK(result.at("loss") < 0.5 * initial.at("loss"));

  // Predict: one prediction per example, computed with the checkpoint's variables.
  const auto w = resumed.get_variable_value("linear/weight");
  const auto b = resumed.get_variable_value("linear/bias");
  int count = 0;
  for (const auto& prediction : resumed.predict(EvalInput())) {
    const auto x = prediction.at("x");
    REQUIRE(x.sizes() == torch::IntArrayRef({2}));
    const double expected = (w.squeeze(0) * x).sum().item<double>() + b.item<double>();
    CHECK(prediction.at("y").item<double>() == Approx(expected).epsilon(1e-5));
    ++count;
  }
  CHECK(count == 64);
  auto only_y = resumed.predict(EvalInput(), PredictOptions().predict_keys({"y"})).next();
  REQUIRE(only_y.has_value());
  CHECK(only_y->size() == 1);
  CHECK_THROWS_WITH(resumed.predict(EvalInput(), PredictOptions().predict_keys({"nope"})).next(),
                    Catch::Contains("'nope'"));
}

TEST_CASE("steps counts from the current global step, end of input stops training", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_steps").string();
  Estimator estimator(RegressionModelFn, dir, TestConfig());
  estimator.train(TrainInput(), TrainOptions().steps(3));
  estimator.train(TrainInput(), TrainOptions().steps(4));
  CHECK(estimator.get_variable_value("global_step").item<int64_t>() == 7);
  // 64 examples in batches of 16 without repeat: 4 more steps, then the input ends.
  estimator.train([] { return RegressionData(16, /*repeat=*/false); });
  CHECK(estimator.get_variable_value("global_step").item<int64_t>() == 11);
  CHECK_THROWS_AS(estimator.train(TrainInput(), TrainOptions().steps(1).max_steps(3)), ConfigError);
  CHECK_THROWS_AS(estimator.train(TrainInput(), TrainOptions().steps(0)), ConfigError);
}

TEST_CASE("training writes loss and global_step/sec summaries to model_dir", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_summaries").string();
  Estimator estimator(RegressionModelFn, dir, TestConfig());
  estimator.train(TrainInput(), TrainOptions().max_steps(12));
  auto files = ListEventFiles(dir);
  REQUIRE(files.size() == 1);
  std::map<std::string, std::vector<int64_t>> steps_by_tag;
  for (const auto& event : ReadScalarEvents(files[0])) steps_by_tag[event.tag].push_back(event.step);
  CHECK(steps_by_tag["loss"] == std::vector<int64_t>{1, 6, 11});
  CHECK(steps_by_tag["mean_prediction"] == std::vector<int64_t>{1, 6, 11});
  CHECK(steps_by_tag["global_step/sec"] == std::vector<int64_t>{5, 10});
}

TEST_CASE("a NaN loss stops training with an error naming the step", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_nan").string();
  auto model_fn = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    EstimatorSpec spec = est::testing::RegressionModelFn(features, labels, mode, ctx);
    if (ctx.global_step() == 3) spec.loss = spec.loss * std::numeric_limits<double>::quiet_NaN();
    return spec;
  };
  Estimator estimator(model_fn, dir, TestConfig());
  CHECK_THROWS_MATCHES(estimator.train(TrainInput(), TrainOptions().max_steps(10)), ModelError,
                       est::testing::MessageMatches(Catch::Contains("NaN loss") && Catch::Contains("step 3")));
}

TEST_CASE("an infinite loss stops training with an error naming the step", "[estimator]") {
  for (const double infinity : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    CAPTURE(infinity);
    const std::string dir = FreshTempDir("estimator_inf").string();
    auto model_fn = [infinity](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
      EstimatorSpec spec = est::testing::RegressionModelFn(features, labels, mode, ctx);
      if (ctx.global_step() == 4) spec.loss = spec.loss + infinity;
      return spec;
    };
    Estimator estimator(model_fn, dir, TestConfig());
    CHECK_THROWS_MATCHES(estimator.train(TrainInput(), TrainOptions().max_steps(10)), ModelError,
                         est::testing::MessageMatches(Catch::Contains("Infinite loss") && Catch::Contains("step 4")));
  }
}

TEST_CASE("a model_fn that returns an invalid spec stops train, evaluate and predict with a ModelError",
          "[estimator]") {
  const std::string dir = FreshTempDir("estimator_invalid_spec").string();
  auto predict_always = [](const Features& features, const at::Tensor&, Mode, ModelContext& ctx) {
    auto linear = ctx.module("linear", [] { return torch::nn::Linear(2, 1); });
    return EstimatorSpec::Predict({{"y", linear->forward(features.at("x"))}});
  };
  Estimator estimator(predict_always, dir, TestConfig());
  CHECK_THROWS_MATCHES(estimator.train(TrainInput(), TrainOptions().max_steps(2)), ModelError,
                       est::testing::MessageMatches(Catch::Contains("mode 'Mode::kTrain'") && Catch::Contains("'Mode::kPredict'")));
  auto no_predictions = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    EstimatorSpec spec = est::testing::RegressionModelFn(features, labels, mode, ctx);
    spec.predictions.clear();
    return spec;
  };
  Estimator(est::testing::RegressionModelFn, dir, TestConfig()).train(TrainInput(), TrainOptions().max_steps(2));
  Estimator predictor(no_predictions, dir, TestConfig());
  auto first_prediction = [&] { return *predictor.predict(EvalInput()).begin(); };
  CHECK_THROWS_MATCHES(first_prediction(), ModelError,
                       est::testing::MessageMatches(Catch::Contains("'Mode::kPredict'") &&
                                                    Catch::Contains("needs predictions")));
}

TEST_CASE("restoring into a model of another shape names the variable and both shapes", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_shapes").string();
  Estimator(RegressionModelFn, dir, TestConfig()).train(TrainInput(), TrainOptions().max_steps(2));
  auto wider = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    auto linear = ctx.module("linear", [] { return torch::nn::Linear(2, 3); });
    auto loss = torch::mse_loss(linear->forward(features.at("x")).mean(1), labels);
    auto& sgd = ctx.optimizer("adam", [&] { return torch::optim::SGD(linear->parameters(), 0.1); });
    return EstimatorSpec::Train(loss, sgd);
  };
  Estimator estimator(wider, dir, TestConfig());
  CHECK_THROWS_MATCHES(estimator.train(TrainInput(), TrainOptions().max_steps(4)), CheckpointError,
                       est::testing::MessageMatches(Catch::Contains("linear/weight") && Catch::Contains("[3, 2]") &&
                                      Catch::Contains("[1, 2]")));
  auto renamed = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    auto linear = ctx.module("other", [] { return torch::nn::Linear(2, 1); });
    auto loss = torch::mse_loss(linear->forward(features.at("x")).squeeze(1), labels);
    return EstimatorSpec::Eval(loss);
  };
  CHECK_THROWS_MATCHES(Estimator(renamed, dir, TestConfig()).evaluate(EvalInput()), CheckpointError,
                       est::testing::MessageMatches(Catch::Contains("other/weight") && Catch::Contains("linear/weight")));
}

TEST_CASE("resuming another model's model_dir fails before the input moves past the consumed batches",
          "[estimator]") {
  // A filter hides the input's length, so moving past a batch means making its examples.
  std::atomic<int64_t> made{0};
  auto counted_input = [&made] {
    return est::testing::RegressionExamples()
        .repeat()
        .filter([&made](const data::Element&) {
          ++made;
          return true;
        })
        .batch(16);
  };
  RunConfig config = TestConfig();
  config.save_checkpoints_steps = 100;
  const std::string dir = FreshTempDir("estimator_other_model_resume").string();
  Estimator(RegressionModelFn, dir, config).train(counted_input, TrainOptions().max_steps(100));
  auto renamed = [](const Features& features, const at::Tensor& labels, Mode, ModelContext& ctx) {
    auto linear = ctx.module("other", [] { return torch::nn::Linear(2, 1); });
    auto loss = torch::mse_loss(linear->forward(features.at("x")).squeeze(1), labels);
    return EstimatorSpec::Train(loss, ctx.optimizer("sgd", [&] { return torch::optim::SGD(linear->parameters(), 0.1); }));
  };
  made = 0;
  CHECK_THROWS_MATCHES(Estimator(renamed, dir, config).train(counted_input, TrainOptions().max_steps(200)),
                       CheckpointError,
                       est::testing::MessageMatches(Catch::Contains("'other/weight' is not in checkpoint") &&
                                                    Catch::Contains("train this model into a new model_dir") &&
                                                    Catch::Contains("warm_start_from")));
  // Only the first batch was read: moving past the 100 consumed would have made 1600.
  CHECK(made == 16);
}

TEST_CASE("a resumed train() of a model with BatchNorm equals an uninterrupted one, to the bit", "[estimator]") {
  // Resuming runs model_fn once before the input moves on; its batch must leave no trace
  // in the running statistics.
  auto batch_norm_model = [](const Features& features, const at::Tensor& labels, Mode, ModelContext& ctx) {
    auto net = ctx.module("net", [] {
      return torch::nn::Sequential(torch::nn::Linear(2, 4), torch::nn::BatchNorm1d(4), torch::nn::Linear(4, 1));
    });
    auto loss = torch::mse_loss(net->forward(features.at("x")).squeeze(1), labels);
    return EstimatorSpec::Train(loss, ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), 0.05); }));
  };
  const std::string dir = FreshTempDir("estimator_batch_norm_resume").string();
  Estimator(batch_norm_model, dir, TestConfig()).train(TrainInput(), TrainOptions().max_steps(10));
  Estimator resumed(batch_norm_model, dir, TestConfig());
  resumed.train(TrainInput(), TrainOptions().max_steps(20));
  const std::string straight_dir = FreshTempDir("estimator_batch_norm_straight").string();
  Estimator straight(batch_norm_model, straight_dir, TestConfig());
  straight.train(TrainInput(), TrainOptions().max_steps(20));
  REQUIRE(resumed.get_variable_value("global_step").item<int64_t>() == 20);
  CheckSameVariables(resumed, straight);
}

TEST_CASE("a corrupt latest checkpoint falls back to the newest valid one", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_corrupt").string();
  Estimator(RegressionModelFn, dir, TestConfig()).train(TrainInput(), TrainOptions().max_steps(20));
  {
    std::fstream data(dir + "/model.ckpt-20.data-00000-of-00001", std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(data);
    data.seekp(3);
    data.put('\x5a');
  }
  Estimator estimator(RegressionModelFn, dir, TestConfig());
  EvalResult result = estimator.evaluate(EvalInput());
  CHECK(result.at("global_step") == 10);
  estimator.train(TrainInput(), TrainOptions().max_steps(25));
  CHECK(estimator.get_variable_value("global_step").item<int64_t>() == 25);
}

TEST_CASE("checkpoints that are all invalid stop training, evaluation and prediction unless ignored", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_all_invalid").string();
  Estimator(RegressionModelFn, dir, TestConfig()).train(TrainInput(), TrainOptions().max_steps(20));
  for (const char* step : {"10", "20"}) {
    std::fstream data(dir + "/model.ckpt-" + step + ".data-00000-of-00001",
                      std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(data);
    data.seekp(3);
    data.put('\x5a');
  }
  const auto data_of = [&](const char* step) { return fs::file_size(dir + "/model.ckpt-" + step + ".data-00000-of-00001"); };
  const auto sizes = std::make_pair(data_of("10"), data_of("20"));
  Estimator strict(RegressionModelFn, dir, TestConfig());
  const std::vector<std::function<void()>> calls = {
      [&] { strict.train(TrainInput(), TrainOptions().max_steps(30)); },
      [&] { strict.evaluate(EvalInput()); },
      [&] { strict.predict(EvalInput()); },
  };
  for (const auto& call : calls) {
    std::string message;
    try {
      call();
    } catch (const CheckpointError& error) {
      message = error.what();
    }
    CHECK_THAT(message, Catch::StartsWith("model_dir " + dir + " holds 2 checkpoints and none is valid: " + dir +
                                          "/model.ckpt-20 (") &&
                            Catch::Contains("; " + dir + "/model.ckpt-10 (") &&
                            Catch::Contains("--ignore-invalid-checkpoints") &&
                            Catch::Contains("RunConfig::ignore_invalid_checkpoints"));
  }
  // Nothing was written over them.
  CHECK(std::make_pair(data_of("10"), data_of("20")) == sizes);
  CHECK(checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-20");

  RunConfig lenient = TestConfig();
  lenient.ignore_invalid_checkpoints = true;
  Estimator fresh(RegressionModelFn, dir, lenient);
  CHECK(fresh.evaluate(EvalInput()).at("global_step") == 0);  // the initial values
  fresh.train(TrainInput(), TrainOptions().max_steps(30));     // from step 0, over them
  CHECK(fresh.get_variable_value("global_step").item<int64_t>() == 30);
  CHECK(checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-30");
}

TEST_CASE("resuming with another batch size warns that the input position counts batches", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_batch_size").string();
  Estimator(RegressionModelFn, dir, TestConfig()).train(TrainInput(16), TrainOptions().max_steps(10));
  {
    est::testing::LogCapture same;
    Estimator(RegressionModelFn, dir, TestConfig()).train(TrainInput(16), TrainOptions().max_steps(20));
    CHECK(same.text().find("Resuming at global step") == std::string::npos);
  }
  est::testing::LogCapture log;
  Estimator(RegressionModelFn, dir, TestConfig()).train(TrainInput(32), TrainOptions().max_steps(30));
  CHECK_THAT(log.text(), Catch::Contains("warning: Resuming at global step 20 with batches of 32 examples, but the "
                                         "checkpoint was written with batches of 16: the input position is counted "
                                         "in batches, so the 20 batches skipped are 640 examples of this input where "
                                         "the first run consumed 320"));
}

TEST_CASE("a LibTorch error inside model_fn is one ModelError line naming the step, the mode and the batch",
          "[estimator]") {
  // Four examples of two features; labels 0, 1, 2 and 7 for a model of three classes.
  const auto input = [] {
    return data::Dataset::FromTensors({{"x", torch::ones({4, 2})}}, torch::tensor({0, 1, 2, 7}, torch::kLong)).batch(4);
  };
  const auto classifier = [](int64_t inputs) {
    return [inputs](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
      auto layer = ctx.module("layer", [inputs] { return torch::nn::Linear(inputs, 3); });
      auto loss = torch::cross_entropy_loss(layer->forward(features.at("x")), labels);
      auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(layer->parameters(), 0.1); });
      return EstimatorSpec::Train(loss, sgd);
    };
  };
  const auto error_of = [&](int64_t inputs) {
    try {
      Estimator(classifier(inputs), FreshTempDir("estimator_model_error").string(), TestConfig())
          .train(input, TrainOptions().max_steps(1));
    } catch (const ModelError& error) {
      return std::string(error.what());
    }
    return std::string("no ModelError");
  };
  const std::string label = error_of(2);
  CHECK_THAT(label, Catch::StartsWith("model_fn failed at global step 0 (Mode::kTrain) on a batch of {'x': Float [4, 2]}, "
                                      "labels Long [4]: ") &&
                        Catch::Contains("Target 7 is out of bounds"));
  const std::string shapes = error_of(3);
  CHECK_THAT(shapes, Catch::StartsWith("model_fn failed at global step 0 (Mode::kTrain) on a batch of ") &&
                         Catch::Contains("(4x2 and 3x3)"));
  for (const std::string& message : {label, shapes}) {
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find("frame #") == std::string::npos);
  }
}

TEST_CASE("any exception out of model_fn is one ModelError line, a missing feature naming the key and those present",
          "[estimator]") {
  const std::string dir = FreshTempDir("estimator_std_error").string();
  const auto error_of = [&](ModelFn model_fn, Mode mode) {
    try {
      Estimator estimator(std::move(model_fn), dir, TestConfig());
      if (mode == Mode::kTrain) estimator.train(TrainInput(4), TrainOptions().max_steps(1));
      if (mode == Mode::kPredict) *estimator.predict(EvalInput()).begin();
    } catch (const ModelError& error) {
      return std::string(error.what());
    }
    return std::string("no ModelError");
  };
  // The regression data's feature is "x".
  auto wrong_feature = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    return RegressionModelFn({{"features", features.at("features")}}, labels, mode, ctx);
  };
  const std::string missing = error_of(wrong_feature, Mode::kTrain);
  CHECK_THAT(missing, Catch::StartsWith("model_fn failed at global step 0 (Mode::kTrain) on a batch of {'x': Float ") &&
                          Catch::EndsWith("std::out_of_range: no feature 'features'; this element has 'x'"));
  auto throws_runtime_error = [](const Features&, const at::Tensor&, Mode, ModelContext&) -> EstimatorSpec {
    throw std::runtime_error("a user's own error");
  };
  CHECK_THAT(error_of(throws_runtime_error, Mode::kTrain), Catch::EndsWith("std::runtime_error: a user's own error"));
  // Labels are undefined in predict: the message says so.
  Estimator(RegressionModelFn, dir, TestConfig()).train(TrainInput(4), TrainOptions().max_steps(1));
  auto uses_labels = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    auto linear = ctx.module("linear", [] { return torch::nn::Linear(2, 1); });
    auto error = linear->forward(features.at("x")).squeeze(1) - labels;
    return EstimatorSpec::Predict({{"error", error}});
  };
  CHECK_THAT(error_of(uses_labels, Mode::kPredict),
             Catch::StartsWith("model_fn failed at global step 1 (Mode::kPredict)") &&
                 Catch::Contains("labels are undefined in Mode::kPredict"));
}

TEST_CASE("any exception out of input_fn or its dataset is a DataError naming the mode and the step",
          "[estimator]") {
  const std::string dir = FreshTempDir("estimator_input_error").string();
  Estimator estimator(RegressionModelFn, dir, TestConfig());
  const InputFn throws = []() -> data::Dataset { throw std::invalid_argument("no such file: train.csv"); };
  CHECK_THROWS_MATCHES(estimator.train(throws, TrainOptions().max_steps(1)), DataError,
                       est::testing::MessageMatches(Catch::Equals(
                           "input_fn (Mode::kTrain, input pipeline 0 of 1) failed: std::invalid_argument: no such "
                           "file: train.csv")));
  // A map function that looks up a feature that is not there, on the third batch.
  const InputFn bad_map = [] {
    return RegressionData(4, /*repeat=*/true).map([count = 0](data::Element batch) mutable {
      if (++count == 3) batch.features.at("y");
      return batch;
    });
  };
  CHECK_THROWS_MATCHES(estimator.train(bad_map, TrainOptions().max_steps(5)), DataError,
                       est::testing::MessageMatches(Catch::Equals(
                           "input_fn's dataset at global step 1 (Mode::kTrain) failed: std::out_of_range: no "
                           "feature 'y'; this element has 'x'")));
}

TEST_CASE("an input that ends before max_steps is a warning naming max_steps and repeat()", "[estimator]") {
  // 64 examples in batches of 16: 4 steps.
  const InputFn once = [] { return RegressionData(16, /*repeat=*/false); };
  {
    est::testing::LogCapture log;
    Estimator estimator(RegressionModelFn, FreshTempDir("estimator_input_ends").string(), TestConfig());
    estimator.train(once, TrainOptions().max_steps(10));
    CHECK(estimator.get_variable_value("global_step").item<int64_t>() == 4);
    CHECK_THAT(log.text(), Catch::Contains("warning: The input ended at global step 4, before the 10 steps asked for "
                                           "(max_steps 10): training stopped early. To train until max_steps, repeat "
                                           "the training dataset in input_fn (Dataset::repeat())"));
  }
  est::testing::LogCapture log;
  Estimator(RegressionModelFn, FreshTempDir("estimator_input_ends_unbounded").string(), TestConfig()).train(once);
  CHECK_THAT(log.text(), Catch::Contains("info: Input exhausted at global step 4") &&
                             !Catch::Contains("before the"));
  // An input without a single batch (an empty list of files, say) is an error, not 0 steps.
  const InputFn empty = [] { return RegressionData(16, /*repeat=*/false).take(0); };
  Estimator nothing(RegressionModelFn, FreshTempDir("estimator_input_empty").string(), TestConfig());
  CHECK_THROWS_MATCHES(nothing.train(empty, TrainOptions().max_steps(10)), DataError,
                       est::testing::MessageMatches(Catch::Equals(
                           "the training input_fn's dataset gave fewer than the 1 batch(es) of one step: check its "
                           "files (an empty file list or empty files) and filters")));
}

TEST_CASE("warm_start_from initialises variables of a new model_dir", "[estimator]") {
  const std::string source = FreshTempDir("estimator_warm_source").string();
  Estimator trained(RegressionModelFn, source, TestConfig());
  trained.train(TrainInput(), TrainOptions().max_steps(20));
  const std::string dir = FreshTempDir("estimator_warm").string();
  Estimator warm(RegressionModelFn, dir, TestConfig(), nlohmann::json{{"learning_rate", 1e-12}}, source);
  warm.train(TrainInput(), TrainOptions().steps(1));
  CHECK(warm.get_variable_value("global_step").item<int64_t>() == 1);
  CHECK(torch::allclose(warm.get_variable_value("linear/weight"), trained.get_variable_value("linear/weight"), 1e-6,
                        1e-6));
}

TEST_CASE("predict without a checkpoint and bad arguments give clear errors", "[estimator]") {
  const std::string dir = FreshTempDir("estimator_errors").string();
  Estimator estimator(RegressionModelFn, dir, TestConfig());
  CHECK_THROWS_MATCHES(estimator.predict(EvalInput()), CheckpointError,
                       est::testing::MessageMatches(Catch::Contains("Could not find trained model")));
  CHECK_THROWS_AS(Estimator(nullptr, dir), ConfigError);
  RunConfig mismatched;
  mismatched.model_dir = dir + "/other";
  CHECK_THROWS_WITH(Estimator(RegressionModelFn, dir, mismatched), Catch::Contains("model_dir"));
  CHECK_THROWS_AS(Estimator(RegressionModelFn, dir, {}, nlohmann::json::array()), ConfigError);
  CHECK(estimator.eval_dir() == dir + "/eval");
  CHECK(estimator.eval_dir("holdout") == dir + "/eval_holdout");
}

TEST_CASE("an evaluation name cannot lead out of model_dir", "[estimator]") {
  const fs::path root = FreshTempDir("estimator_eval_name");
  const std::string dir = (root / "model").string();
  Estimator estimator(RegressionModelFn, dir, TestConfig());
  estimator.train(TrainInput(), TrainOptions().max_steps(2));
  for (const std::string name : {"../../escaped", "a/b", "..\\x"}) {
    CAPTURE(name);
    CHECK_THROWS_MATCHES(estimator.evaluate(EvalInput(), EvalOptions().name(name)), ConfigError,
                         est::testing::MessageMatches(Catch::Contains("'" + name + "'") && Catch::Contains(dir)));
  }
  CHECK(estimator.evaluate(EvalInput(), EvalOptions().name("..")).at("global_step") == 2);
  CHECK(fs::is_directory(fs::path(dir) / "eval_.."));
  CHECK_FALSE(fs::exists(root / "escaped"));
}

TEST_CASE("a resumed train() returns to its input position without remaking the consumed examples",
          "[estimator]") {
  // 64 examples through a counting map, shuffled, repeated: 300 steps of 16 consume 75 passes.
  std::atomic<int64_t> made{0};
  auto counted_input = [&made] {
    return est::testing::RegressionExamples()
        .map([&made](data::Element element) {
          ++made;
          return element;
        })
        .shuffle(64, 3)
        .repeat()
        .batch(16);
  };
  RunConfig config = TestConfig();
  config.save_checkpoints_steps = 300;
  const std::string dir = FreshTempDir("estimator_input_position").string();
  Estimator(RegressionModelFn, dir, config).train(counted_input, TrainOptions().max_steps(300));
  made = 0;
  Estimator resumed(RegressionModelFn, dir, config);
  resumed.train(counted_input, TrainOptions().max_steps(310));
  // Replaying the 300 consumed batches would make 4800 examples. Moving past them makes the
  // shuffle buffer's 64 after the move, plus the first batch (read before the move to create
  // the variables: 16 and the 63 more its buffer fill takes); the 11 batches of 10 steps
  // and the next step's make 176. At most 64 + 79 + 176 = 319.
  CHECK(made <= 319);

  const std::string straight_dir = FreshTempDir("estimator_input_position_straight").string();
  Estimator straight(RegressionModelFn, straight_dir, config);
  straight.train(counted_input, TrainOptions().max_steps(310));
  CheckSameVariables(resumed, straight);
}

TEST_CASE("the fused Adam step trains the same variables as Adam's own step(), to the bit", "[estimator]") {
  // Wide enough that the fused step's vector loop and its tail both run; AdamW with weight decay.
  auto model_fn = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    auto net = ctx.module("net", [] {
      return torch::nn::Sequential(torch::nn::Linear(2, 37), torch::nn::ReLU(), torch::nn::Linear(37, 1));
    });
    auto loss = torch::mse_loss(net->forward(features.at("x")).squeeze(1), labels);
    auto& adamw = ctx.optimizer(
        "adamw", [&] { return torch::optim::AdamW(net->parameters(), torch::optim::AdamWOptions(0.01).weight_decay(0.1)); });
    return EstimatorSpec::Train(loss, adamw);
  };
  auto train = [&](bool fused) {
    RunConfig config = TestConfig();
    config.fused_optimizer_step = fused;
    auto estimator = std::make_unique<Estimator>(model_fn, FreshTempDir(fused ? "fused_adam" : "unfused_adam").string(),
                                                 config);
    estimator->train(TrainInput(), TrainOptions().max_steps(25));
    return estimator;
  };
  auto fused = train(true);
  auto unfused = train(false);
  CheckSameVariables(*fused, *unfused, /*tolerance=*/0);
  // The optimizer's state went into the checkpoints alike: a resumed run continues the same.
  fused->train(TrainInput(), TrainOptions().max_steps(40));
  unfused->train(TrainInput(), TrainOptions().max_steps(40));
  CheckSameVariables(*fused, *unfused, /*tolerance=*/0);
}
