#pragma once
// What the canned estimators' tests train on: a click-through rule a model can learn, parsed
// like a TFRecord input, and the columns that read it.

#include <ATen/ATen.h>

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/example.h"
#include "data/example/example.pb.h"
#include "distribute/input_context.h"
#include "estimator/canned/canned_estimators.h"
#include "estimator/feature_columns/feature_columns.h"
#include "tests/data/elements_dataset.h"

namespace est::testing {

namespace fc = est::feature_columns;

/// A click-through rule a model can learn: the label is 1 where sigmoid(effect of the category +
/// effect of the age bucket + 0.5 · price) beats a uniform draw; `spend` is 2 · category effect
/// + price. Parsed and batched like a TFRecord input.
struct RuleData {
  std::vector<est::data::Element> train, eval;

  RuleData(const est::data::ExampleSpec& spec, const std::string& label, int64_t train_rows, int64_t eval_rows) {
    std::mt19937 random(73);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const std::vector<std::string> categories{"books", "toys", "garden", "music", "shoes", "travel"};
    const std::vector<double> effects{-2.0, 1.5, -0.5, 2.0, 0.0, -1.0};
    const auto parse = est::data::ParseExample(spec, label);
    for (int64_t row = 0; row < train_rows + eval_rows; ++row) {
      const size_t c = random() % categories.size();
      const double age = 18 + 50 * uniform(random);
      const double price = 4 * uniform(random) - 2;
      const double logit = effects[c] + (age < 30 ? 1.0 : -1.0) + 0.5 * price;
      est::tfexample::Example example;
      auto& features = *example.mutable_features()->mutable_feature();
      features["category"].mutable_bytes_list()->add_value(categories[c]);
      features["age"].mutable_float_list()->add_value(static_cast<float>(age));
      features["price"].mutable_float_list()->add_value(static_cast<float>(price));
      features["clicked"].mutable_int64_list()->add_value(uniform(random) < 1 / (1 + std::exp(-logit)) ? 1 : 0);
      features["spend"].mutable_float_list()->add_value(static_cast<float>(2 * effects[c] + price));
      (row < train_rows ? train : eval).push_back(parse(example.SerializeAsString()));
    }
  }
};

/// `elements` batched by padded_batch (this input pipeline's share of them, `batch` being the
/// per-replica batch), repeated for training.
inline est::data::Dataset Batches(const std::vector<est::data::Element>& elements, int64_t batch, bool repeat,
                                  const est::distribute::InputContext& input = {}) {
  est::data::Dataset dataset = ElementsDataset(elements);
  dataset = dataset.shard(input.num_input_pipelines(), input.input_pipeline_id()).padded_batch(batch);
  return repeat ? dataset.repeat() : dataset;
}

struct RuleColumns {
  fc::CategoricalColumnPtr category = fc::categorical_column_with_vocabulary_list(
      "category", std::vector<std::string>{"books", "toys", "garden", "music", "shoes", "travel"});
  std::shared_ptr<const fc::NumericColumn> age = fc::numeric_column("age");
  std::shared_ptr<const fc::NumericColumn> price = fc::numeric_column("price");
  fc::FeatureColumnPtr age_buckets = fc::bucketized_column(age, {30});
  std::vector<fc::FeatureColumnPtr> linear() const { return {category, age_buckets, price}; }
  std::vector<fc::DenseColumnPtr> dnn() const {
    const auto normalized = fc::numeric_column(
        "age", fc::NumericColumnOptions().normalizer([](const at::Tensor& x) { return x.sub(43).div(15); }));
    return {fc::embedding_column(category, 3), normalized, price};
  }
  std::vector<fc::FeatureColumnPtr> all() const {
    std::vector<fc::FeatureColumnPtr> columns = linear();
    for (const auto& column : dnn()) columns.push_back(column);
    return columns;
  }
};

/// Wide & deep over `columns` with rates that learn the rule in a few hundred steps.
inline est::canned::DNNLinearCombinedOptions RuleWideDeep(const RuleColumns& columns) {
  return est::canned::DNNLinearCombinedOptions()
      .linear_feature_columns(columns.linear())
      .dnn_feature_columns(columns.dnn())
      .dnn_hidden_units({8, 4})
      .linear_optimizer({"Ftrl", 0.1})
      .dnn_optimizer({"Adagrad", 0.1});
}

}  // namespace est::testing
