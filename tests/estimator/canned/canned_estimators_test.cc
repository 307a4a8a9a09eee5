// The canned estimators: warm-started from a checkpoint TensorFlow 2.15's own
// DNNLinearCombinedClassifier wrote (tensorflow_wide_deep_checkpoint/, made by
// make_tensorflow_wide_deep_checkpoint.py), wide & deep predicts what TensorFlow predicted; every
// estimator learns a known rule; checkpoints carry TensorFlow's variable names; exported with a
// parsing serving input, wide & deep answers tf.Example requests as TensorFlow predicted.

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "data/example/example.pb.h"
#include "data/tfrecord.h"
#include "data/tfrecord_dataset.h"
#include "estimator/canned/canned_estimators.h"
#include "estimator/export/parsing_serving_input.h"
#include "estimator/feature_columns/feature_columns.h"
#include "estimator/schedules/decay_schedules.h"
#include "serving/predictor.h"
#include "tests/estimator/canned/canned_test_data.h"
#include "tests/test_util.h"

namespace fc = est::feature_columns;
using est::canned::DNNLinearCombinedOptions;

namespace {

const std::filesystem::path kFixture = EST_TENSORFLOW_WIDE_DEEP_DIR;

std::vector<std::string> Categories() {
  return {"apparel", "automotive", "baby",    "beauty",  "books",    "cameras",     "charity", "dating",
          "education", "electronics", "finance", "food",  "furniture", "games",   "garden",  "health",
          "home",    "insurance",  "jewelry", "movies",  "music",    "news",        "pets",    "real_estate",
          "shoes",   "software",   "sports",  "telecom", "toys",     "travel"};
}

std::vector<std::string> Tags() {
  std::vector<std::string> tags;
  for (int i = 0; i < 50; ++i) tags.push_back((i < 10 ? "tag0" : "tag") + std::to_string(i));
  return tags;
}

/// The columns of make_tensorflow_wide_deep_checkpoint.py (TENSORFLOW_CANNED_FACTS.md).
DNNLinearCombinedOptions WideDeepOfFixture() {
  const auto user = fc::categorical_column_with_hash_bucket("user", 100);
  const auto category = fc::categorical_column_with_vocabulary_list("category", Categories(),
                                                                   fc::VocabularyOptions().num_oov_buckets(2));
  const auto device =
      fc::categorical_column_with_vocabulary_list("device", std::vector<std::string>{"mobile", "desktop", "tablet"});
  const auto hour = fc::categorical_column_with_identity("hour", 24);
  const auto tags = fc::categorical_column_with_vocabulary_list("tags", Tags());
  const auto age_buckets =
      fc::bucketized_column(fc::numeric_column("age"), {18, 25, 30, 35, 40, 45, 50, 55, 60, 65});
  const auto normalized = [](double mean, double scale) {
    return fc::NumericColumnOptions().normalizer(
        [mean, scale](const at::Tensor& x) { return x.sub(static_cast<float>(mean)).div(static_cast<float>(scale)); });
  };
  return DNNLinearCombinedOptions()
      .linear_feature_columns({user, category, device, fc::crossed_column({"category", "device"}, 50), hour,
                               age_buckets, fc::numeric_column("price"), tags})
      .dnn_feature_columns({fc::embedding_column(user, 4), fc::indicator_column(category),
                            fc::indicator_column(device), fc::indicator_column(hour),
                            fc::numeric_column("age", normalized(40.0, 15.0)),
                            fc::numeric_column("price", normalized(3.0, 2.0)),
                            fc::embedding_column(tags, 2, fc::EmbeddingColumnOptions().combiner(fc::Combiner::kMean))})
      .dnn_hidden_units({8, 4})
      .linear_optimizer({"Ftrl", 0.1})
      .dnn_optimizer({"Adagrad", 0.05});
}

std::vector<fc::FeatureColumnPtr> AllColumns(const DNNLinearCombinedOptions& options) {
  std::vector<fc::FeatureColumnPtr> columns = options.linear_feature_columns();
  columns.insert(columns.end(), options.dnn_feature_columns().begin(), options.dnn_feature_columns().end());
  return columns;
}

nlohmann::json ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

}  // namespace

namespace {

/// Checks `model`'s predictions of the fixture's examples from `checkpoint` against TensorFlow's.
void CheckTensorFlowPredictions(est::Estimator& model, const DNNLinearCombinedOptions& options,
                                const std::string& checkpoint) {
  const est::data::ExampleSpec spec = fc::make_parse_example_spec(AllColumns(options));
  const auto input_fn = [&] {
    return est::data::TFRecordDataset({(kFixture / "examples.tfrecord").string()},
                                      est::data::TFRecordDatasetOptions().parser(est::data::ParseExample(spec)))
        .padded_batch(7);
  };
  const nlohmann::json expected = ReadJson(kFixture / "predictions.json")["predictions"];
  size_t i = 0;
  for (const est::Prediction& prediction : model.predict(input_fn, est::PredictOptions().checkpoint_path(checkpoint))) {
    REQUIRE(i < expected.size());
    INFO("example " << i);
    CHECK(prediction.at("logits").item<double>() == Approx(expected[i]["logits"][0].get<double>()).margin(1e-5));
    CHECK(prediction.at("logistic").item<double>() == Approx(expected[i]["logistic"][0].get<double>()).margin(1e-5));
    CHECK(prediction.at("probabilities")[1].item<double>() ==
          Approx(expected[i]["probabilities"][1].get<double>()).margin(1e-5));
    CHECK(prediction.at("class_ids").item<int64_t>() == expected[i]["class_ids"][0].get<int64_t>());
    ++i;
  }
  CHECK(i == expected.size());
}

}  // namespace

TEST_CASE("canned: wide & deep reads TensorFlow's checkpoint and predicts what TensorFlow predicted", "[canned]") {
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_tf_checkpoint");
  const DNNLinearCombinedOptions options = WideDeepOfFixture();
  est::canned::DNNLinearCombinedClassifier model(options, (dir / "model").string());
  CheckTensorFlowPredictions(model, options, (kFixture / "model.ckpt-50").string());
}

TEST_CASE("canned: wide & deep warm-started from TensorFlow's checkpoint starts from TensorFlow's model", "[canned]") {
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_warm_start");
  // One step of SGD at 1e-12 moves no prediction by more than about 1e-11: the checkpoint it
  // leaves holds the warm-started variables.
  const DNNLinearCombinedOptions options =
      WideDeepOfFixture().linear_optimizer({"SGD", 1e-12}).dnn_optimizer({"SGD", 1e-12});
  est::canned::DNNLinearCombinedClassifier model(options, (dir / "model").string(), {}, kFixture.string());
  const est::data::ExampleSpec spec =
      est::canned::classifier_parse_example_spec(AllColumns(options), "clicked");
  model.train(
      [&] {
        return est::data::TFRecordDataset(
                   {(kFixture / "examples.tfrecord").string()},
                   est::data::TFRecordDatasetOptions().parser(est::data::ParseExample(spec, "clicked")))
            .padded_batch(8);
      },
      est::TrainOptions().max_steps(1));
  CheckTensorFlowPredictions(model, options, (dir / "model" / "model.ckpt-1").string());
}

TEST_CASE("canned: wide & deep exported for tf.Example requests serves what TensorFlow predicted", "[canned]") {
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_serving");
  const DNNLinearCombinedOptions options = WideDeepOfFixture();
  est::canned::DNNLinearCombinedClassifier model(options, (dir / "model").string());
  // TensorFlow's build_parsing_serving_input_receiver_fn(make_parse_example_spec(columns)).
  const est::ServingInputFn serving_input = est::ParsingServingInputFn(fc::make_parse_example_spec(AllColumns(options)));
  const std::string path = model.export_saved_model(
      (dir / "export").string(), serving_input,
      est::ExportOptions().checkpoint_path((kFixture / "model.ckpt-50").string()).weights_only(true));
  const est::serving::Predictor predictor(model.model_fn(), path,
                                          est::serving::PredictorOptions().serving_input_fn(serving_input));
  CHECK(predictor.records_input() == "examples");

  std::vector<std::string> records;
  est::data::TFRecordReader reader((kFixture / "examples.tfrecord").string());
  for (std::string record; reader.next(&record);) records.push_back(record);
  const nlohmann::json expected = ReadJson(kFixture / "predictions.json")["predictions"];
  REQUIRE(records.size() == expected.size());
  // Requests of 1, 6 and the rest: the tags of each are padded to that request's longest list.
  size_t first = 0;
  for (size_t count : {size_t{1}, size_t{6}, records.size() - 7}) {
    const std::vector<std::string> request(records.begin() + static_cast<std::ptrdiff_t>(first),
                                           records.begin() + static_cast<std::ptrdiff_t>(first + count));
    const est::TensorMap answer = predictor.predict(predictor.parse_records(request));
    REQUIRE(answer.at("logits").size(0) == static_cast<int64_t>(count));
    for (size_t i = 0; i < count; ++i) {
      INFO("example " << first + i);
      const nlohmann::json& want = expected[first + i];
      const auto row = static_cast<int64_t>(i);
      CHECK(answer.at("logits")[row][0].item<double>() == Approx(want["logits"][0].get<double>()).margin(1e-5));
      CHECK(answer.at("probabilities")[row][1].item<double>() ==
            Approx(want["probabilities"][1].get<double>()).margin(1e-5));
      CHECK(answer.at("class_ids")[row][0].item<int64_t>() == want["class_ids"][0].get<int64_t>());
    }
    first += count;
  }

  // A record that is not a tf.Example is refused naming it.
  std::vector<std::string> bad{records[0], "\x0a\xff"};
  CHECK_THROWS_WITH(predictor.parse_records(bad), Catch::Contains("record 1 of input 'examples'"));
}

namespace {

using est::testing::Batches;
using est::testing::RuleColumns;
using est::testing::RuleData;

/// Trains `model` on `data` for `steps` and evaluates it on the held-out rows.
est::EvalResult TrainAndEvaluate(est::Estimator& model, const RuleData& data, int64_t steps) {
  model.train([&] { return Batches(data.train, 32, /*repeat=*/true); }, est::TrainOptions().max_steps(steps));
  return model.evaluate([&] { return Batches(data.eval, 100, /*repeat=*/false); });
}

}  // namespace

TEST_CASE("canned: every classifier learns a known rule, its metrics named as TensorFlow's", "[canned]") {
  const RuleColumns columns;
  const RuleData data(est::canned::classifier_parse_example_spec(columns.all(), "clicked"), "clicked", 3000, 1000);
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_classifiers");
  // The rule's own AUC on these rows is about 0.8; a model that learned nothing has 0.5.
  SECTION("LinearClassifier") {
    est::canned::LinearClassifier model(est::canned::LinearOptions().feature_columns(columns.linear()),
                                        (dir / "linear").string());
    const est::EvalResult result = TrainAndEvaluate(model, data, 300);
    CHECK(result.at("auc") > 0.75);
    for (const char* key : {"accuracy", "accuracy_baseline", "auc_precision_recall", "average_loss", "label/mean",
                            "loss", "precision", "prediction/mean", "recall"}) {
      CHECK(result.count(key) == 1);
    }
  }
  SECTION("DNNClassifier") {
    est::canned::DNNClassifier model(est::canned::DNNOptions()
                                         .feature_columns(columns.dnn())
                                         .hidden_units({16, 8})
                                         .optimizer({"Adagrad", 0.1}),
                                     (dir / "dnn").string());
    CHECK(TrainAndEvaluate(model, data, 300).at("auc") > 0.75);
  }
  SECTION("DNNLinearCombinedClassifier") {
    est::canned::DNNLinearCombinedClassifier model(est::canned::DNNLinearCombinedOptions()
                                                       .linear_feature_columns(columns.linear())
                                                       .dnn_feature_columns(columns.dnn())
                                                       .dnn_hidden_units({16, 8})
                                                       .linear_optimizer({"Ftrl", 0.1})
                                                       .dnn_optimizer({"Adagrad", 0.1}),
                                                   (dir / "wide_deep").string());
    CHECK(TrainAndEvaluate(model, data, 300).at("auc") > 0.75);
  }
  SECTION("BaselineClassifier learns the prior") {
    est::canned::BaselineClassifier model(est::canned::BaselineOptions(), (dir / "baseline").string());
    const est::EvalResult result = TrainAndEvaluate(model, data, 300);
    CHECK(result.at("prediction/mean") == Approx(result.at("label/mean")).margin(0.05));
  }
}

TEST_CASE("canned: regressors learn a known rule", "[canned]") {
  const RuleColumns columns;
  const RuleData data(est::canned::regressor_parse_example_spec(columns.all(), "spend"), "spend", 3000, 1000);
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_regressors");
  // The labels' variance is about 5; predicting their mean would leave an average loss near it.
  SECTION("LinearRegressor") {
    est::canned::LinearRegressor model(est::canned::LinearOptions().feature_columns(columns.linear()),
                                       (dir / "linear").string());
    CHECK(TrainAndEvaluate(model, data, 300).at("average_loss") < 0.5);
  }
  SECTION("DNNRegressor") {
    est::canned::DNNRegressor model(
        est::canned::DNNOptions().feature_columns(columns.dnn()).hidden_units({16}).optimizer({"Adagrad", 0.1}),
        (dir / "dnn").string());
    CHECK(TrainAndEvaluate(model, data, 300).at("average_loss") < 0.5);
  }
  SECTION("DNNLinearCombinedRegressor") {
    est::canned::DNNLinearCombinedRegressor model(est::canned::DNNLinearCombinedOptions()
                                                      .linear_feature_columns(columns.linear())
                                                      .dnn_feature_columns(columns.dnn())
                                                      .dnn_hidden_units({16})
                                                      .linear_optimizer({"Ftrl", 0.2})
                                                      .dnn_optimizer({"Adagrad", 0.1}),
                                                  (dir / "wide_deep").string());
    CHECK(TrainAndEvaluate(model, data, 300).at("average_loss") < 0.5);
  }
  SECTION("BaselineRegressor predicts the mean") {
    est::canned::BaselineRegressor model(est::canned::BaselineOptions().optimizer({"SGD", 0.1}),
                                         (dir / "baseline").string());
    const est::EvalResult result = TrainAndEvaluate(model, data, 300);
    CHECK(result.at("prediction/mean") == Approx(result.at("label/mean")).margin(0.2));
  }
}

TEST_CASE("canned: an optimizer's learning-rate schedule sets its rate at every step", "[canned]") {
  const RuleColumns columns;
  const RuleData data(est::canned::regressor_parse_example_spec(columns.linear(), "spend", 1), "spend", 64, 0);
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_schedule");
  // 0.1 at global steps 0 to 2, then 0: the linear model moves three times, then stays.
  est::canned::OptimizerSpec sgd("SGD");
  sgd.learning_rate_schedule = est::schedules::PiecewiseConstantDecay({2}, {0.1, 0.0});
  est::canned::LinearRegressor model(est::canned::LinearOptions().feature_columns(columns.linear()).optimizer(sgd),
                                     (dir / "model").string());
  const auto input = [&] { return Batches(data.train, 16, /*repeat=*/true); };
  const auto weights = [&](int64_t step) {
    const est::checkpoint::CheckpointReader reader((dir / "model" / ("model.ckpt-" + std::to_string(step))).string());
    return reader.tensor("linear/linear_model/price/weights");
  };
  model.train(input, est::TrainOptions().max_steps(2));
  model.train(input, est::TrainOptions().max_steps(3));
  model.train(input, est::TrainOptions().max_steps(6));
  CHECK_FALSE(at::equal(weights(2), weights(3)));
  CHECK(at::equal(weights(3), weights(6)));
  // A schedule that starts at 0 cannot make an optimizer.
  sgd.learning_rate_schedule = est::schedules::PiecewiseConstantDecay({5}, {0.0, 0.1});
  est::canned::LinearRegressor stalled(est::canned::LinearOptions().feature_columns(columns.linear()).optimizer(sgd),
                                       (dir / "stalled").string());
  CHECK_THROWS_WITH(stalled.train(input, est::TrainOptions().max_steps(1)),
                    Catch::Contains("learning rate 0 at step 0 of PiecewiseConstantDecay") && Catch::Contains("must be above 0"));
}

TEST_CASE("canned: an optimizer's clipnorm and global_clipnorm bound its gradients as Keras' do", "[canned]") {
  const RuleColumns columns;
  const RuleData data(est::canned::regressor_parse_example_spec(columns.linear(), "spend", 1), "spend", 64, 0);
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_clipping");
  const auto input = [&] { return Batches(data.train, 64, /*repeat=*/true); };
  // One step of SGD at 0.5 from zero weights moves each variable by 0.5 times its gradient.
  const auto moves = [&](const std::string& name, est::canned::OptimizerSpec sgd) {
    est::canned::LinearRegressor model(est::canned::LinearOptions().feature_columns(columns.linear()).optimizer(sgd),
                                       (dir / name).string());
    model.train(input, est::TrainOptions().max_steps(1));
    const est::checkpoint::CheckpointReader reader((dir / name / "model.ckpt-1").string());
    std::vector<double> norms;
    for (const std::string& tensor : reader.tensor_names())
      if (tensor.rfind("linear/linear_model/", 0) == 0) norms.push_back(reader.tensor(tensor).norm().item<double>() / 0.5);
    return norms;
  };
  const auto global = [](const std::vector<double>& norms) {
    double squares = 0;
    for (double norm : norms) squares += norm * norm;
    return std::sqrt(squares);
  };
  const std::vector<double> free = moves("free", {"SGD", 0.5});
  REQUIRE(free.size() == 4);  // category, age buckets, price, bias
  REQUIRE(global(free) > 0.1);
  est::canned::OptimizerSpec clipped("SGD", 0.5);
  clipped.global_clipnorm = 0.01;
  const std::vector<double> by_global = moves("global", clipped);
  CHECK(global(by_global) == Approx(0.01).epsilon(1e-4));
  for (size_t i = 0; i < free.size(); ++i) CHECK(by_global[i] == Approx(free[i] * 0.01 / global(free)).epsilon(1e-4));
  clipped.global_clipnorm.reset();
  clipped.clipnorm = 0.01;
  const std::vector<double> each = moves("each", clipped);
  for (size_t i = 0; i < free.size(); ++i) CHECK(each[i] == Approx(std::min(free[i], 0.01)).epsilon(1e-4));
  clipped.global_clipnorm = 0.01;
  est::canned::LinearRegressor both(est::canned::LinearOptions().feature_columns(columns.linear()).optimizer(clipped),
                                    (dir / "both").string());
  CHECK_THROWS_WITH(both.train(input, est::TrainOptions().max_steps(1)),
                    Catch::Contains("clipnorm and global_clipnorm are both set"));
}

TEST_CASE("canned: checkpoints name the variables as TensorFlow's", "[canned]") {
  const RuleColumns columns;
  const RuleData data(est::canned::classifier_parse_example_spec(columns.all(), "clicked"), "clicked", 64, 0);
  const std::filesystem::path dir = est::testing::FreshTempDir("canned_names");
  est::canned::DNNLinearCombinedClassifier model(
      est::canned::DNNLinearCombinedOptions()
          .linear_feature_columns(columns.linear())
          .dnn_feature_columns(columns.dnn())
          .dnn_hidden_units({4, 2}),
      (dir / "model").string());
  model.train([&] { return Batches(data.train, 32, /*repeat=*/true); }, est::TrainOptions().max_steps(2));
  const est::checkpoint::CheckpointReader reader((dir / "model" / "model.ckpt-2").string());
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"dnn/hiddenlayer_0/kernel", {5, 4}},
      {"dnn/hiddenlayer_0/bias", {4}},
      {"dnn/hiddenlayer_1/kernel", {4, 2}},
      {"dnn/logits/kernel", {2, 1}},
      {"dnn/logits/bias", {1}},
      {"dnn/input_from_feature_columns/input_layer/category_embedding/embedding_weights", {6, 3}},
      {"linear/linear_model/age_bucketized/weights", {2, 1}},
      {"linear/linear_model/category/weights", {6, 1}},
      {"linear/linear_model/price/weights", {1, 1}},
      {"linear/linear_model/bias_weights", {1}},
      {"global_step", {}},
  };
  for (const auto& [name, shape] : expected) {
    INFO(name);
    REQUIRE(reader.has_tensor(name));
    CHECK(reader.shape(name) == shape);
  }
}

TEST_CASE("canned: bad options are named", "[canned]") {
  const RuleColumns columns;
  CHECK_THROWS_WITH(est::canned::DNNLinearCombinedClassifier(est::canned::DNNLinearCombinedOptions()),
                    Catch::Contains("linear_feature_columns and dnn_feature_columns are both empty"));
  CHECK_THROWS_WITH(est::canned::LinearClassifier(est::canned::LinearOptions()),
                    Catch::Contains("the linear part has no feature columns"));
  CHECK_THROWS_WITH(est::canned::LinearClassifier(
                        est::canned::LinearOptions().feature_columns(columns.linear()).n_classes(1)),
                    Catch::Contains("n_classes is 1"));
  CHECK_THROWS_WITH(est::canned::DNNClassifier(est::canned::DNNOptions().feature_columns(columns.dnn())),
                    Catch::Contains("hidden_units is empty"));
  CHECK_THROWS_WITH(est::canned::DNNClassifier(
                        est::canned::DNNOptions().feature_columns(columns.dnn()).hidden_units({4}).dropout(1.0)),
                    Catch::Contains("dropout 1 is not in [0, 1)"));
}
