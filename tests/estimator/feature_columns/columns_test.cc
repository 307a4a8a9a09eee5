// The feature columns against TensorFlow 2.15's (tensorflow_dense_values.inc, written by
// make_tensorflow_dense.py): the same tf.train.Examples parsed by the ParsingPlan's spec and
// batched by padded_batch, each dense column's tensor and the linear model's output with the same
// known variables; then shared embeddings, the parse spec and the errors.

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "data/dataset.h"
#include "data/example.h"
#include "estimator/feature_columns/feature_columns.h"
#include "tests/data/elements_dataset.h"

using namespace std::string_literals;
using namespace est::feature_columns;

namespace {

const std::vector<std::string> kTensorFlowExamples = {
#define EST_TENSORFLOW_EXAMPLES
#include "tests/estimator/feature_columns/tensorflow_dense_values.inc"
#undef EST_TENSORFLOW_EXAMPLES
};

struct TensorFlowCase {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

const std::vector<TensorFlowCase> kTensorFlowCases = {
#include "tests/estimator/feature_columns/tensorflow_dense_values.inc"
};

/// make_tensorflow_dense.py's known values: element i of a variable is (i % 17 - 8) / 10.
at::Tensor KnownValues(const std::vector<int64_t>& shape) {
  const at::Tensor i = at::arange(c10::multiply_integers(shape), at::kLong);
  return i.remainder(17).sub(8).to(at::kFloat).div(10).reshape(shape);
}

EmbeddingColumnOptions Known() { return EmbeddingColumnOptions().initializer(KnownValues); }

/// The columns of make_tensorflow_dense.py.
struct Columns {
  std::shared_ptr<const NumericColumn> age = numeric_column("age");
  std::shared_ptr<const NumericColumn> price = numeric_column("price", NumericColumnOptions().shape({2}));
  std::shared_ptr<const BucketizedColumn> age_buckets = bucketized_column(age, {18.0, 25.0, 35.0, 50.0});
  CategoricalColumnPtr user = categorical_column_with_hash_bucket("user", 7);
  CategoricalColumnPtr category = categorical_column_with_vocabulary_list(
      "category", std::vector<std::string>{"books", "toys", "garden"}, VocabularyOptions().num_oov_buckets(2));
  CategoricalColumnPtr device =
      categorical_column_with_vocabulary_list("device", std::vector<std::string>{"mobile", "desktop", "tablet"});
  CategoricalColumnPtr hour = categorical_column_with_identity("hour", 24);
  CategoricalColumnPtr tags = categorical_column_with_vocabulary_list("tags", std::vector<std::string>{"a", "b", "c"});
  CategoricalColumnPtr weighted_tags = weighted_categorical_column(tags, "tag_weights");
  CategoricalColumnPtr cross = crossed_column({category, "device"}, 11);

  std::map<std::string, DenseColumnPtr> dense() const {
    return {{"age", age},
            {"price", price},
            {"age_bucketized", age_buckets},
            {"category_indicator", indicator_column(category)},
            {"hour_indicator", indicator_column(hour)},
            {"tags_weighted_indicator", indicator_column(weighted_tags)},
            {"cross_indicator", indicator_column(cross)},
            {"bucketized_indicator", indicator_column(age_buckets)},
            {"user_embedding_mean", embedding_column(user, 3, Known())},
            {"tags_embedding_sqrtn", embedding_column(weighted_tags, 2, Known().combiner(Combiner::kSqrtn))},
            {"tags_embedding_sum", embedding_column(tags, 2, Known().combiner(Combiner::kSum))},
            {"category_embedding_max_norm", embedding_column(category, 4, Known().max_norm(0.5))}};
  }
  std::vector<FeatureColumnPtr> linear() const {
    return {age, price, age_buckets, user, category, cross, weighted_tags, hour};
  }
};

/// The examples parsed by `plan`'s spec and batched by padded_batch.
est::Features ParsedBatch(const ParsingPlan& plan) {
  const est::data::RecordParser parse = est::data::ParseExample(plan.example_spec());
  std::vector<est::data::Element> elements;
  for (const std::string& record : kTensorFlowExamples) elements.push_back(parse(record));
  auto dataset = est::testing::ElementsDataset(elements);
  return dataset.padded_batch(static_cast<int64_t>(elements.size())).make_iterator()->next().value().features;
}

const TensorFlowCase& CaseNamed(const std::string& name) {
  for (const TensorFlowCase& tf_case : kTensorFlowCases) {
    if (tf_case.name == name) return tf_case;
  }
  FAIL("no TensorFlow case " << name);
  throw;
}

at::Tensor Expected(const TensorFlowCase& tf_case) {
  return at::tensor(tf_case.values, at::kDouble).reshape(tf_case.shape).to(at::kFloat);
}

}  // namespace

TEST_CASE("feature columns: every dense column equals TensorFlow's", "[feature_columns]") {
  const Columns columns;
  for (const auto& [name, column] : columns.dense()) {
    INFO(name);
    const ParsingPlan plan({column});
    const est::Features features = ParsedBatch(plan);
    InputLayer layer(std::vector<DenseColumnPtr>{column});
    const at::Tensor dense = layer->forward(ColumnInputs(features, plan));
    const at::Tensor expected = Expected(CaseNamed(name));
    REQUIRE(dense.sizes() == expected.sizes());
    CHECK(dense.allclose(expected, 1e-6, 1e-6));
  }
}

TEST_CASE("feature columns: the linear model equals TensorFlow's with the same weights", "[feature_columns]") {
  const Columns columns;
  const ParsingPlan plan(columns.linear());
  const est::Features features = ParsedBatch(plan);
  LinearModel model(columns.linear());
  {
    torch::NoGradGuard no_grad;
    for (const FeatureColumnPtr& column : model->columns()) {
      at::Tensor weights = model->weights(column->name());
      weights.copy_(KnownValues(weights.sizes().vec()));
    }
    model->bias().fill_(0.25);
  }
  const at::Tensor output = model->forward(ColumnInputs(features, plan));
  CHECK(output.allclose(Expected(CaseNamed("linear_model")), 1e-5, 1e-5));
  CHECK(model->named_parameters().contains("linear_model/category_X_device/weights"));
  CHECK(model->named_parameters().contains("linear_model/tags_weighted_by_tag_weights/weights"));
  CHECK(model->named_parameters()["linear_model/bias_weights"].sizes() == at::IntArrayRef({1}));
}

TEST_CASE("feature columns: the input layer concatenates in name order and trains", "[feature_columns]") {
  const Columns columns;
  const auto user_embedding = embedding_column(columns.user, 3, Known());
  std::vector<DenseColumnPtr> dense{user_embedding, columns.age, columns.price};
  const ParsingPlan plan(std::vector<FeatureColumnPtr>(dense.begin(), dense.end()));
  const est::Features features = ParsedBatch(plan);
  InputLayer layer(dense, "input_from_feature_columns/input_layer/");
  const at::Tensor output = layer->forward(ColumnInputs(features, plan));
  // age (1), price (2), user_embedding (3): sorted by name.
  CHECK(output.sizes() == at::IntArrayRef({5, 6}));
  CHECK(output.slice(1, 0, 1).allclose(Expected(CaseNamed("age"))));
  CHECK(output.slice(1, 3, 6).allclose(Expected(CaseNamed("user_embedding_mean"))));
  const auto parameters = layer->named_parameters();
  REQUIRE(parameters.contains("input_from_feature_columns/input_layer/user_embedding/embedding_weights"));
  output.sum().backward();
  const at::Tensor gradient =
      parameters["input_from_feature_columns/input_layer/user_embedding/embedding_weights"].grad();
  // Five examples, "u1" twice (once alone, once with "u3"): some rows get gradients, the rest none.
  CHECK(gradient.abs().sum(1).gt(0).sum().item<int64_t>() >= 2);
  CHECK(gradient.abs().sum(1).eq(0).sum().item<int64_t>() >= 1);
}

TEST_CASE("feature columns: shared embeddings read one table", "[feature_columns]") {
  const Columns columns;
  const CategoricalColumnPtr user5 = categorical_column_with_hash_bucket("user", 5);
  const auto shared = shared_embeddings({columns.category, user5}, 2, Known());
  REQUIRE(shared.size() == 2);
  CHECK(shared[0]->name() == "category_shared_embedding");
  CHECK(shared[1]->table_name() == "category_user_shared_embedding");
  std::vector<DenseColumnPtr> dense(shared.begin(), shared.end());
  const ParsingPlan plan(std::vector<FeatureColumnPtr>(dense.begin(), dense.end()));
  const est::Features features = ParsedBatch(plan);
  InputLayer layer(dense);
  CHECK(layer->parameters().size() == 1);
  const at::Tensor output = layer->forward(ColumnInputs(features, plan));
  // Each part equals an embedding column of its own with the same table.
  InputLayer alone(std::vector<DenseColumnPtr>{embedding_column(columns.category, 2, Known()),
                                               embedding_column(user5, 2, Known())});
  CHECK(output.allclose(alone->forward(ColumnInputs(features, plan))));
  CHECK_THROWS_AS(shared_embeddings({columns.category, columns.user}, 2), est::ConfigError);
}

TEST_CASE("feature columns: a batch where no example has a value of a feature", "[feature_columns]") {
  const Columns columns;
  const auto tags_embedding = embedding_column(columns.weighted_tags, 2, Known());
  const auto hours = indicator_column(columns.hour);
  const ParsingPlan plan({tags_embedding, hours, columns.age});
  // Parsed and padded: no values at all, [batch, 0].
  const est::Features features{{{"tags", at::zeros({3, 0}, at::kLong)},
                                {"tags_length", at::zeros({3}, at::kLong)},
                                {"tag_weights", at::zeros({3, 0})},
                                {"tag_weights_length", at::zeros({3}, at::kLong)},
                                {"hour", at::zeros({3, 0}, at::kLong)},
                                {"hour_length", at::zeros({3}, at::kLong)},
                                {"age", at::ones({3, 1})}}};
  InputLayer layer(std::vector<DenseColumnPtr>{tags_embedding, hours, columns.age});
  const at::Tensor output = layer->forward(ColumnInputs(features, plan));
  CHECK(output.sizes() == at::IntArrayRef({3, 1 + 24 + 2}));
  CHECK(output.slice(1, 1).abs().sum().item<double>() == 0.0);
  LinearModel linear(std::vector<FeatureColumnPtr>{columns.weighted_tags, columns.hour});
  CHECK(linear->forward(ColumnInputs(features, plan)).equal(at::zeros({3, 1})));
}

TEST_CASE("feature columns: the parse spec is TensorFlow's", "[feature_columns]") {
  const Columns columns;
  const est::data::ExampleSpec spec =
      make_parse_example_spec({columns.age_buckets, columns.price, columns.weighted_tags, columns.cross, columns.hour});
  CHECK(spec.at("age").fixed_length());
  CHECK(spec.at("price").shape() == std::vector<int64_t>{2});
  CHECK_FALSE(spec.at("tags").fixed_length());
  CHECK(spec.at("tags").type() == est::data::FeatureType::kBytes);
  CHECK(spec.at("tag_weights").type() == est::data::FeatureType::kFloat32);
  CHECK(spec.at("hour").type() == est::data::FeatureType::kInt64);
  // category: its vocabulary id; device: its fingerprint (a raw key of the cross).
  CHECK(spec.at("category").ids_per_value() == 1);
  CHECK(spec.at("device").ids_per_value() == 1);
  CHECK(spec.size() == 7);
  const est::data::ExampleSpec two_uses = make_parse_example_spec({columns.device, columns.cross});
  CHECK(two_uses.at("device").ids_per_value() == 2);
}

TEST_CASE("feature columns: plans of the same columns in any order read each other's batches", "[feature_columns]") {
  const Columns columns;
  // Equal columns made apart (as est-serve rebuilds them) and listed in another order.
  const CategoricalColumnPtr device_again =
      categorical_column_with_vocabulary_list("device", std::vector<std::string>{"mobile", "desktop", "tablet"});
  const ParsingPlan parsing({columns.cross, columns.device});
  const ParsingPlan reading({device_again, crossed_column({columns.category, "device"}, 11)});
  const est::Features features = ParsedBatch(parsing);
  const CategoricalIds read = device_again->ids(ColumnInputs(features, reading));
  const CategoricalIds parsed = columns.device->ids(ColumnInputs(features, parsing));
  CHECK(read.ids.equal(parsed.ids));
  CHECK(IdsToRows(read) == IntRows{{0}, {1}, {2}, {0}, {}});
  const CategoricalIds cross_read = columns.cross->ids(ColumnInputs(features, reading));
  CHECK(cross_read.ids.equal(columns.cross->ids(ColumnInputs(features, parsing)).ids));
  // A batch parsed for other uses is refused, not misread.
  const ParsingPlan device_only({columns.device});
  CHECK_THROWS_WITH(columns.device->ids(ColumnInputs(ParsedBatch(device_only), reading)),
                    Catch::Contains("\"device\" is Long [5, 1]; the plan parses it to int64 [batch, values, 2]"));
}

TEST_CASE("feature columns: names are TensorFlow's", "[feature_columns]") {
  const Columns columns;
  CHECK(columns.age_buckets->name() == "age_bucketized");
  CHECK(columns.cross->name() == "category_X_device");
  CHECK(crossed_column({"b", "a", columns.hour}, 5)->name() == "a_X_b_X_hour");
  CHECK(columns.weighted_tags->name() == "tags_weighted_by_tag_weights");
  CHECK(indicator_column(columns.hour)->name() == "hour_indicator");
  CHECK(embedding_column(columns.user, 4)->name() == "user_embedding");
  CHECK(embedding_column(columns.user, 4)->table_name() == "user_embedding/embedding_weights");
}

TEST_CASE("feature columns: bad columns and inputs are named", "[feature_columns]") {
  const Columns columns;
  CHECK_THROWS_WITH(crossed_column({columns.user, "device"}, 10),
                    Catch::Contains("is a categorical_column_with_hash_bucket"));
  CHECK_THROWS_AS(crossed_column({"device"}, 10), est::ConfigError);
  CHECK_THROWS_AS(embedding_column(columns.user, 0), est::ConfigError);
  CHECK_THROWS_AS(numeric_column("x", NumericColumnOptions().shape({2}).default_value({1, 2, 3})), est::ConfigError);
  CHECK_THROWS_AS(bucketized_column(numeric_column("x", NumericColumnOptions().shape({2, 2})), {1.0}),
                  est::ConfigError);
  CHECK_THROWS_WITH(ParsingPlan({columns.hour, categorical_column_with_hash_bucket("hour", 3)}),
                    Catch::Contains("feature \"hour\" is read as integer categories by one column and as strings"));
  CHECK_THROWS_WITH(InputLayer(std::vector<DenseColumnPtr>{columns.age, numeric_column("age")}),
                    Catch::Contains("two columns are named \"age\""));
  const ParsingPlan plan({columns.age, columns.price});
  est::Features features = ParsedBatch(plan);
  features["price"] = at::zeros({4, 2});
  CHECK_THROWS_WITH(ColumnInputs(features, plan), Catch::Contains("\"price\" has 4 examples"));
  features.erase("price");
  const ColumnInputs inputs(features, plan);
  CHECK_THROWS_WITH(columns.price->dense_tensor(inputs, {}), Catch::Contains("the batch has no feature \"price\""));
  CHECK_THROWS_WITH(embedding_column(columns.user, 2)->dense_tensor(inputs, {}),
                    Catch::Contains("is not among the layer's variables"));
}
