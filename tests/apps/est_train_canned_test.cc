// est-train --model canned as a user runs it: the example spec of examples/canned/ trains wide &
// deep on click-through data made here, with no C++ and no TensorFlow, to an AUC a wrong model
// cannot reach, into a checkpoint with TensorFlow's variable names, in one process and across
// est-launch's workers and parameter servers; flags that do not apply to a canned estimator are
// refused.

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_reader.h"
#include "data/example/example.pb.h"
#include "data/tfrecord.h"
#include "tests/apps/run_command.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kCannedCategories[] = {"apparel", "books", "cameras", "dating", "finance", "games",
                                             "health",  "music", "pets",    "sports", "toys",    "travel"};
constexpr const char* kCannedDevices[] = {"mobile", "desktop", "tablet"};

// Writes `rows` click-through examples with the features of examples/canned/wide_deep.json, clicks
// drawn from a logistic rule of category, category x device, age and hour (users are noise).
void WriteCannedClicks(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> category_of(0, 11);
  std::uniform_int_distribution<int> device_of(0, 2);
  std::uniform_int_distribution<int> hour_of(0, 23);
  std::uniform_int_distribution<int> user_of(0, 199);
  std::uniform_real_distribution<double> age_of(16, 80);
  std::uniform_real_distribution<double> price_of(0.5, 8);
  std::uniform_real_distribution<double> unit(0, 1);
  est::data::TFRecordWriter writer(path);
  for (int i = 0; i < rows; ++i) {
    const int category = category_of(random);
    const int device = device_of(random);
    const int hour = hour_of(random);
    const double age = age_of(random);
    const double price = price_of(random);
    const double logit = -1.0 + 1.5 * std::sin(category * 1.7) + ((category + device) % 3 == 0 ? 1.2 : -0.6) +
                         (age < 30 && device == 0 ? 1.5 : 0.0) + (hour >= 18 ? 0.7 : 0.0) - 0.15 * price;
    const bool clicked = unit(random) < 1 / (1 + std::exp(-logit));
    est::tfexample::Example example;
    auto& features = *example.mutable_features()->mutable_feature();
    features["user"].mutable_bytes_list()->add_value("u" + std::to_string(user_of(random)));
    features["category"].mutable_bytes_list()->add_value(kCannedCategories[category]);
    features["device"].mutable_bytes_list()->add_value(kCannedDevices[device]);
    features["hour"].mutable_int64_list()->add_value(hour);
    features["age"].mutable_float_list()->add_value(static_cast<float>(age));
    features["price"].mutable_float_list()->add_value(static_cast<float>(price));
    features["clicked"].mutable_int64_list()->add_value(clicked ? 1 : 0);
    writer.write(example.SerializeAsString());
  }
  writer.close();
}

// The example spec beside its data: DIR/wide_deep.json, DIR/data/train-0000{0,1}.tfrecord and
// DIR/data/eval.tfrecord.
fs::path CannedExampleDir(const std::string& name) {
  const fs::path dir = est::testing::FreshTempDir(name);
  fs::create_directories(dir / "data");
  fs::copy_file(CANNED_EXAMPLE_SPEC, dir / "wide_deep.json");
  WriteCannedClicks((dir / "data" / "train-00000.tfrecord").string(), 8000, 1);
  WriteCannedClicks((dir / "data" / "train-00001.tfrecord").string(), 8000, 2);
  WriteCannedClicks((dir / "data" / "eval.tfrecord").string(), 4000, 3);
  return dir;
}

est::testing::RunResult RunCannedEstTrain(const fs::path& dir, const std::string& args) {
  return est::testing::RunCommand(std::string(EST_TRAIN_PATH) + " --model canned --spec " +
                                  (dir / "wide_deep.json").string() + " --model-dir " + (dir / "model").string() +
                                  " " + args);
}

// The last evaluation's value of `metric` in est-train's output; -1 when there is none.
double CannedEvalMetric(const std::string& output, const std::string& metric) {
  const std::regex line("Saving dict for global step \\d+: (?:.*, )?" + metric + " = ([0-9.e+-]+)");
  double value = -1;
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it)
    value = std::stod((*it)[1].str());
  return value;
}

}  // namespace

TEST_CASE("est-train --model canned trains the example spec's wide & deep to a good AUC", "[apps][canned]") {
  const fs::path dir = CannedExampleDir("est_train_canned");
  const auto run = RunCannedEstTrain(dir, "--max-steps 150 --save-checkpoints-steps 150");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  // 0.815 here; a model of the label's prior alone has 0.5, one of the wrong features (user) about that.
  CHECK(CannedEvalMetric(run.output, "auc") > 0.75);
  CHECK(CannedEvalMetric(run.output, "accuracy") > CannedEvalMetric(run.output, "accuracy_baseline"));
  for (const char* metric : {"auc_precision_recall", "precision", "recall", "label/mean", "prediction/mean",
                             "average_loss", "loss"})
    CHECK(CannedEvalMetric(run.output, metric) >= 0);
  // TensorFlow's variable names, so that tf.train.load_checkpoint finds what it expects.
  const est::checkpoint::CheckpointReader reader((dir / "model" / "model.ckpt-150").string());
  for (const char* name : {"linear/linear_model/category_X_device/weights", "linear/linear_model/bias_weights",
                           "linear/linear_model/age_bucketized/weights", "dnn/hiddenlayer_0/kernel",
                           "dnn/hiddenlayer_1/bias", "dnn/logits/kernel",
                           "dnn/input_from_feature_columns/input_layer/user_embedding/embedding_weights"}) {
    INFO(name);
    CHECK(reader.has_tensor(name));
  }
}

TEST_CASE("est-train --model canned refuses flags whose part the spec gives", "[apps][canned]") {
  const fs::path dir = CannedExampleDir("est_train_canned_flags");
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--learning-rate 0.1", "--learning-rate does not apply to --model canned"},
           {"--lr-schedule 'CosineDecay(decay_steps=10)'", "--lr-schedule does not apply to --model canned"},
           {"--clip-norm 1", "--clip-norm does not apply to --model canned"},
           {"--export final", "--export does not apply to --model canned yet"},
           {"--data-files x", "--data-files does not apply to --model canned"},
           {"--batch-size 32", "--batch-size 32 and the spec's train.batch_size 256 both give the batch size"}}) {
    INFO(args);
    const auto run = RunCannedEstTrain(dir, args);
    CHECK(run.exit_code == 1);
    CHECK(est::testing::Contains(run.output, "est-train: error: " + expected));
  }
  const auto no_spec = est::testing::RunCommand(std::string(EST_TRAIN_PATH) + " --model canned --model-dir " +
                                                (dir / "model").string());
  CHECK(est::testing::Contains(no_spec.output, "est-train: error: --model canned needs --spec"));
  const auto spec_elsewhere = est::testing::RunCommand(std::string(EST_TRAIN_PATH) + " --model linear --spec " +
                                                       (dir / "wide_deep.json").string() + " --model-dir " +
                                                       (dir / "model").string());
  CHECK(est::testing::Contains(spec_elsewhere.output, "est-train: error: --spec applies to --model canned"));
}

TEST_CASE("est-train --model canned trains across workers and parameter servers, as the other models do",
          "[apps][canned]") {
  const fs::path dir = CannedExampleDir("est_train_canned_cluster");
  for (const std::string& cluster : {std::string("--workers 2 --evaluator -- ") + EST_TRAIN_PATH +
                                         " --strategy multi_worker",
                                     std::string("--workers 2 --ps 1 --evaluator -- ") + EST_TRAIN_PATH +
                                         " --strategy parameter_server"}) {
    INFO(cluster);
    fs::remove_all(dir / "model");
    const auto run = est::testing::RunCommand(std::string(EST_LAUNCH_PATH) + " " + cluster +
                                              " --model canned --spec " + (dir / "wide_deep.json").string() +
                                              " --model-dir " + (dir / "model").string() +
                                              " --max-steps 150 --save-checkpoints-steps 150");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    // The evaluator task's evaluation of the last checkpoint.
    CHECK(CannedEvalMetric(run.output, "auc") > 0.75);
  }
}
