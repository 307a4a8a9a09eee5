// est-train's canned-estimator spec (apps/est_train/canned_spec.h): every estimator and every
// column kind reads, and a bad spec is an error naming the file, the JSON path and what was
// expected.

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/est_train/canned_model.h"
#include "apps/est_train/canned_spec.h"
#include "common/error.h"
#include "data/example.h"
#include "data/example/example.pb.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// A wide & deep spec of every column kind, reading data/*.tfrecord beside it.
nlohmann::json SpecOfEveryColumn() {
  return nlohmann::json::parse(R"({
    "estimator": "DNNLinearCombinedClassifier",
    "columns": {
      "user": {"categorical_column_with_hash_bucket": {"key": "user", "hash_bucket_size": 100}},
      "hour": {"categorical_column_with_identity": {"key": "hour", "num_buckets": 24, "default_value": 0}},
      "device": {"categorical_column_with_vocabulary_list": {"key": "device",
                                                             "vocabulary_list": ["mobile", "desktop"],
                                                             "num_oov_buckets": 1}},
      "shop": {"categorical_column_with_vocabulary_list": {"key": "shop", "vocabulary_list": [3, 5, 8]}},
      "category": {"categorical_column_with_vocabulary_file": {"key": "category",
                                                               "vocabulary_file": "categories.txt"}},
      "tags": {"weighted_categorical_column": {"categorical_column": "tag_ids", "weight_feature_key": "tag_weights"}},
      "tag_ids": {"categorical_column_with_identity": {"key": "tag_ids", "num_buckets": 24}},
      "age": {"numeric_column": {"key": "age", "shape": [1]}},
      "price": {"numeric_column": {"key": "price", "default_value": 3}},
      "age_normalized": {"numeric_column": {"key": "age", "normalizer": {"subtract": 40, "divide": 15}}},
      "age_buckets": {"bucketized_column": {"source_column": "age", "boundaries": [18, 30, 50]}},
      "age_x_device": {"crossed_column": {"keys": [{"column": "age_buckets"}, "device"], "hash_bucket_size": 50,
                                          "hash_key": 7}},
      "device_indicator": {"indicator_column": {"categorical_column": "device"}},
      "user_embedding": {"embedding_column": {"categorical_column": "user", "dimension": 4, "combiner": "sqrtn",
                                              "max_norm": 2, "trainable": true}},
      "shared": {"shared_embeddings": {"categorical_columns": ["hour", "tag_ids"], "dimension": 3}}
    },
    "linear_feature_columns": ["user", "hour", "device", "shop", "category", "tags", "age_buckets", "age_x_device",
                               "price"],
    "linear_optimizer": {"name": "Ftrl", "learning_rate": 0.05, "l1_regularization_strength": 0.001},
    "linear_sparse_combiner": "mean",
    "dnn_feature_columns": ["user_embedding", "device_indicator", "age_normalized", "shared"],
    "dnn_hidden_units": [8, 4],
    "dnn_optimizer": "Adam",
    "dnn_activation_fn": "tanh",
    "dnn_dropout": 0.1,
    "n_classes": 2,
    "label": "clicked",
    "weight_column": null,
    "train": {"files": "data/train*.tfrecord", "batch_size": 32, "shuffle_buffer": 100, "compression_type": "GZIP"},
    "eval": {"files": ["data/eval.tfrecord"]}
  })");
}

// Writes `spec` as DIR/model.json with DIR/categories.txt and DIR/data/{train-0,eval}.tfrecord.
std::string WriteCannedSpec(const nlohmann::json& spec, const std::string& name = "canned_spec") {
  const fs::path dir = est::testing::FreshTempDir(name);
  fs::create_directories(dir / "data");
  std::ofstream(dir / "categories.txt") << "books\nmusic\ntoys\n";
  std::ofstream(dir / "data" / "train-0.tfrecord");
  std::ofstream(dir / "data" / "eval.tfrecord");
  std::ofstream(dir / "model.json") << spec.dump(2);
  return (dir / "model.json").string();
}

// The spec of `estimator` with its parameters `parameters` over two columns.
nlohmann::json SpecOf(const std::string& estimator, const nlohmann::json& parameters) {
  nlohmann::json spec = nlohmann::json::parse(R"({
    "columns": {"device": {"categorical_column_with_hash_bucket": {"key": "device", "hash_bucket_size": 10}},
                "age": {"numeric_column": {"key": "age"}}},
    "label": "y", "train": {"files": ["data/train*.tfrecord"]}, "eval": {"files": ["data/eval.tfrecord"]}})");
  spec["estimator"] = estimator;
  spec.update(parameters);
  return spec;
}

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("canned spec: every column kind reads, files resolve against the spec's folder", "[apps][canned]") {
  const std::string file = WriteCannedSpec(SpecOfEveryColumn());
  const est_train::CannedSpec spec = est_train::ReadCannedSpec(file, /*list_files=*/true);
  CHECK(spec.estimator.name == "DNNLinearCombinedClassifier");
  CHECK(spec.estimator.label == "clicked");
  const fs::path dir = fs::path(file).parent_path();
  CHECK(spec.train.files == std::vector<std::string>{(dir / "data" / "train-0.tfrecord").string()});
  CHECK(spec.eval.files == std::vector<std::string>{(dir / "data" / "eval.tfrecord").string()});
  CHECK(spec.train.batch_size == 32);
  CHECK(spec.train.shuffle_buffer == 100);
  CHECK(spec.train.compression == est::data::TFRecordCompression::kGzip);
  // Parsed as classifier_parse_example_spec of the columns: raw features, the label, weights.
  for (const char* feature : {"user", "hour", "device", "shop", "category", "tag_ids", "tag_weights", "age", "price",
                              "clicked"}) {
    INFO(feature);
    CHECK(spec.estimator.example_spec.count(feature) == 1);
  }
  const est_train::ModelRecipe recipe = est_train::CannedModel(spec, 32, 32, 1);
  CHECK(recipe.make_estimator != nullptr);
  for (const char* metric : {"accuracy", "accuracy_baseline", "auc", "auc_precision_recall", "average_loss",
                             "label/mean", "precision", "prediction/mean", "recall"}) {
    INFO(metric);
    CHECK(Has(recipe.metrics, metric));
  }
}

TEST_CASE("canned spec: every canned estimator reads with its parameters", "[apps][canned]") {
  const auto read = [](const nlohmann::json& spec) {
    return est_train::CannedModel(est_train::ReadCannedSpec(WriteCannedSpec(spec), true), 8, 8, 1);
  };
  CHECK(Has(read(SpecOf("LinearClassifier", {{"feature_columns", {"device", "age"}}, {"n_classes", 3},
                                             {"optimizer", "SGD"}, {"sparse_combiner", "sqrtn"}}))
                .metrics,
            "accuracy"));
  CHECK(Has(read(SpecOf("LinearRegressor", {{"feature_columns", {"device", "age"}}, {"label_dimension", 2},
                                            {"loss_reduction", "sum"}}))
                .metrics,
            "average_loss"));
  CHECK(Has(read(SpecOf("DNNClassifier", {{"feature_columns", {"age"}}, {"hidden_units", {4}},
                                          {"activation_fn", "relu6"}, {"batch_norm", true}}))
                .metrics,
            "auc"));
  CHECK(Has(read(SpecOf("DNNRegressor", {{"feature_columns", {"age"}}, {"hidden_units", {4, 2}},
                                         {"optimizer", {{"name", "RMSProp"}, {"learning_rate", 0.01}}}}))
                .metrics,
            "prediction/mean"));
  CHECK(Has(read(SpecOf("DNNLinearCombinedRegressor",
                        {{"linear_feature_columns", {"device"}},
                         {"linear_optimizer",
                          {{"name", "Ftrl"},
                           {"learning_rate", "CosineDecay(initial_learning_rate=0.1, decay_steps=100)"},
                           {"global_clipnorm", 5.0}}}}))
                .metrics,
            "label/mean"));
  CHECK(Has(read(SpecOf("BaselineClassifier", {{"optimizer", "Ftrl"}, {"weight_column", "w"}})).metrics, "auc"));
  CHECK(Has(read(SpecOf("BaselineRegressor", nlohmann::json::object())).metrics, "average_loss"));
}

TEST_CASE("canned spec: a label_vocabulary makes labels strings, parsed to class ids, and names the classes",
          "[apps][canned]") {
  const est_train::CannedSpec spec = est_train::ReadCannedSpec(
      WriteCannedSpec(SpecOf("DNNClassifier", {{"feature_columns", {"age"}}, {"hidden_units", {4}}, {"n_classes", 3},
                                               {"label_vocabulary", {"low", "mid", "high"}}})),
      true);
  CHECK((spec.estimator.class_labels == std::vector<std::string>{"low", "mid", "high"}));
  CHECK(est_train::CannedModel(spec, 8, 8, 1).class_labels == spec.estimator.class_labels);
  const est::data::RecordParser parse = est::data::ParseExample(spec.estimator.example_spec, "y");
  auto record = [](const std::string& label) {
    est::tfexample::Example example;
    auto& features = *example.mutable_features()->mutable_feature();
    features["age"].mutable_float_list()->add_value(30);
    features["y"].mutable_bytes_list()->add_value(label);
    return example.SerializeAsString();
  };
  CHECK(parse(record("high")).labels.item<int64_t>() == 2);
  CHECK(parse(record("low")).labels.item<int64_t>() == 0);
  CHECK_THAT(est::testing::ErrorMessageOf<est::DataError>([&] { parse(record("none")); }),
             Contains("label \"y\" is \"none\", which is not in the label vocabulary; expected one of \"low\", "
                      "\"mid\", \"high\""));
}

TEST_CASE("canned spec: errors name the spec file, the JSON path and what was expected", "[apps][canned]") {
  const auto error_of = [](nlohmann::json spec, bool list_files = true) {
    const std::string file = WriteCannedSpec(spec, "canned_spec_error");
    try {
      est_train::ReadCannedSpec(file, list_files);
    } catch (const est::ConfigError& error) {
      const std::string what = error.what();
      CHECK(what.rfind(file + ": ", 0) == 0);
      return what.substr(file.size() + 2);
    } catch (const est::DataError& error) {
      const std::string what = error.what();
      CHECK(what.rfind(file + ": ", 0) == 0);
      return "DataError: " + what.substr(file.size() + 2);
    }
    FAIL("no error");
    return std::string();
  };
  const nlohmann::json good = SpecOfEveryColumn();
  auto spec = good;
  spec["estimator"] = "DNNLinearCombinedClassifer";
  CHECK_THAT(error_of(spec), Contains("estimator: expected one of LinearClassifier") &&
                                 Contains("got \"DNNLinearCombinedClassifer\""));
  spec = good;
  spec["columns"]["user"] = {{"categorical_column_with_hash", {{"key", "user"}}}};
  CHECK_THAT(error_of(spec), Contains("columns.user.categorical_column_with_hash: unknown key; columns.user takes "
                                      "numeric_column, bucketized_column"));
  spec = good;
  spec["columns"]["user_embedding"]["embedding_column"]["categorical_column"] = "users";
  CHECK_THAT(error_of(spec),
             Contains("columns.user_embedding.embedding_column.categorical_column: no column named 'users'"));
  spec = good;
  spec["dnn_feature_columns"].push_back("nowhere");
  CHECK_THAT(error_of(spec), Contains("dnn_feature_columns[4]: no column named 'nowhere' in columns"));
  spec = good;
  spec["columns"]["user"]["categorical_column_with_hash_bucket"]["hash_bucket_size"] = -5;
  CHECK_THAT(error_of(spec), Contains("columns.user.categorical_column_with_hash_bucket.hash_bucket_size: expected "
                                      "an integer from 1 to 9223372036854775807, got -5"));
  spec = good;
  spec["dnn_hidden_unit"] = {3};
  CHECK_THAT(error_of(spec), Contains("dnn_hidden_unit: unknown key; the spec takes estimator, columns"));
  spec = good;
  spec["columns"]["age"]["numeric_column"]["normaliser"] = {{"divide", 2}};
  CHECK_THAT(error_of(spec), Contains("columns.age.numeric_column.normaliser: unknown key"));
  spec = good;
  spec["hidden_units"] = {3};  // DNNClassifier's name, not wide & deep's
  CHECK_THAT(error_of(spec), Contains("hidden_units: unknown key") && Contains("of DNNLinearCombinedClassifier"));
  spec = good;
  spec["train"]["files"] = {"data/train*.tfrecord", "data/nothing-*.tfrecord"};
  CHECK_THAT(error_of(spec), Contains("DataError: train.files[1]: ") && Contains("nothing-*.tfrecord"));
  CHECK_NOTHROW(est_train::ReadCannedSpec(WriteCannedSpec(spec, "canned_spec_unlisted"), /*list_files=*/false));
  spec = good;
  spec["n_classes"] = 2.5;
  CHECK_THAT(error_of(spec), Contains("n_classes: expected an integer from 2 to"));
  spec = good;
  spec["columns"]["age_x_device"]["crossed_column"]["hash_key"] = -1;
  CHECK_THAT(error_of(spec), Contains("hash_key: expected an integer from 0 to 18446744073709551615, got -1"));
  spec = good;
  spec["columns"]["age_normalized"]["numeric_column"]["normalizer"]["divide"] = 1e-50;
  CHECK_THAT(error_of(spec), Contains("normalizer.divide: expected a number other than 0 (as float32)"));
  spec = good;
  spec["columns"]["age_normalized"]["numeric_column"]["normalizer"]["subtract"] = 1e39;
  CHECK_THAT(error_of(spec), Contains("normalizer.subtract: expected a number from"));
  spec = good;
  spec["columns"]["device_indicator"]["indicator_column"]["categorical_column"] = "user_embedding";
  CHECK_THAT(error_of(spec), Contains("indicator_column.categorical_column: expected the name of a categorical"));
  spec = good;
  spec["columns"]["a"] = {{"indicator_column", {{"categorical_column", "b"}}}};
  spec["columns"]["b"] = {{"embedding_column", {{"categorical_column", "a"}, {"dimension", 2}}}};
  CHECK_THAT(error_of(spec), Contains("refers back to itself"));
  spec = good;
  spec["linear_feature_columns"].push_back("shared");
  spec["columns"]["x"] = {{"indicator_column", {{"categorical_column", "shared"}}}};
  CHECK_THAT(error_of(spec), Contains("'shared' is a shared_embeddings list"));
  spec = good;
  spec["dnn_feature_columns"].push_back("user");
  CHECK_THAT(error_of(spec), Contains("dnn_feature_columns[4]: expected the name of a dense column"));
  spec = good;
  spec["dnn_optimizer"] = {{"name", "Adam"}, {"beta", 0.1}};
  CHECK_THAT(error_of(spec), Contains("dnn_optimizer.beta: a parameter of Ftrl, not of Adam"));
  spec = good;
  spec["columns"]["age_buckets"]["bucketized_column"]["boundaries"] = {30, 18};
  CHECK_THAT(error_of(spec), Contains("bucketized_column.boundaries: expected boundaries in increasing order"));
  spec = good;
  spec["columns"]["category"]["categorical_column_with_vocabulary_file"]["vocabulary_file"] = "missing.txt";
  CHECK_THAT(error_of(spec), Contains("columns.category.categorical_column_with_vocabulary_file: ") &&
                                 Contains("missing.txt"));
  spec = good;
  spec.erase("label");
  CHECK_THAT(error_of(spec), Contains("label: missing; the spec needs it"));
  spec = good;
  spec["label_vocabulary"] = {"no", "yes", "maybe"};
  CHECK_THAT(error_of(spec), Contains("label_vocabulary: names 3 classes; expected n_classes (2) of them"));
  spec["label_vocabulary"] = {"no", "no"};
  CHECK_THAT(error_of(spec), Contains("\"no\" is listed twice"));
  spec = good;
  spec["dnn_optimizer"] = {{"name", "Adagrad"}, {"learning_rate", "CosineDecay(decay_steps=100)"}};
  CHECK_THAT(error_of(spec), Contains("dnn_optimizer.learning_rate: the schedule needs its initial rate here"));
  spec["dnn_optimizer"]["learning_rate"] = "SlowDecay(0.1)";
  CHECK_THAT(error_of(spec), Contains("dnn_optimizer.learning_rate: ") && Contains("SlowDecay"));
  spec["dnn_optimizer"] = {{"name", "Adagrad"}, {"clipnorm", 1.0}, {"global_clipnorm", 5.0}};
  CHECK_THAT(error_of(spec), Contains("dnn_optimizer: has clipnorm and global_clipnorm"));
  spec["dnn_optimizer"] = {{"name", "Adagrad"}, {"global_clipnorm", 0}};
  CHECK_THAT(error_of(spec), Contains("dnn_optimizer.global_clipnorm: expected a number above 0"));
  spec = good;
  spec["train"]["header"] = false;
  CHECK_THAT(error_of(spec), Contains("train.header: a parameter of \"format\": \"csv\" input"));
  spec["train"]["format"] = "csv";
  CHECK_THAT(error_of(spec), Contains("train.compression_type: a parameter of TFRecord input"));
  spec["train"].erase("compression_type");
  CHECK_THAT(error_of(spec), Contains("\"header\": false needs \"column_names\""));
  spec["train"]["field_delim"] = ";;";
  spec["train"]["column_names"] = {"a"};
  CHECK_THAT(error_of(spec), Contains("train.field_delim: expected one character"));
  spec = good;
  spec["train"]["compression_type"] = "gzip";
  CHECK_THAT(error_of(spec),
             Contains("train.compression_type: expected \"\" (none), \"GZIP\" or \"ZLIB\", got \"gzip\""));

  const fs::path dir = est::testing::FreshTempDir("canned_spec_not_json");
  std::ofstream(dir / "model.json") << "{\"estimator\": ";
  CHECK_THROWS_WITH(est_train::ReadCannedSpec((dir / "model.json").string(), false),
                    Contains((dir / "model.json").string() + ": not JSON"));
}
