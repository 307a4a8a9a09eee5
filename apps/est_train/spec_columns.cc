#include "apps/est_train/spec_columns.h"

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <limits>

#include "apps/common/number_checks.h"
#include "common/error.h"
#include "estimator/feature_columns/feature_columns.h"

namespace est_train {
namespace fc = est::feature_columns;

namespace {

constexpr double kMaxFloat = std::numeric_limits<float>::max();

const std::vector<std::string>& ColumnKinds() {
  static const std::vector<std::string> kinds{"numeric_column",
                                              "bucketized_column",
                                              "categorical_column_with_hash_bucket",
                                              "categorical_column_with_vocabulary_list",
                                              "categorical_column_with_vocabulary_file",
                                              "categorical_column_with_identity",
                                              "crossed_column",
                                              "weighted_categorical_column",
                                              "indicator_column",
                                              "embedding_column",
                                              "shared_embeddings"};
  return kinds;
}

// dtype of a categorical column: TensorFlow's tf.string or tf.int64, written "string" or "int64".
bool IntegerDtype(const SpecValue& column) {
  return column.has("dtype") && column.at("dtype").choice({"string", "int64"}) == "int64";
}

fc::NumericColumnOptions NumericOptionsOf(const SpecValue& column) {
  column.expect_object({"key", "shape", "default_value", "normalizer"});
  fc::NumericColumnOptions options;
  if (column.has("shape")) options.shape(column.at("shape").integers(1, est_apps::kMaxInt64));
  if (column.has("default_value")) options.default_value(column.at("default_value").numbers(-kMaxFloat, kMaxFloat));
  if (column.has("normalizer")) {
    // normalizer_fn=lambda x: (x - subtract) / divide, declared: a lambda cannot live in JSON.
    const SpecValue normalizer = column.at("normalizer");
    normalizer.expect_object({"subtract", "divide"});
    const float subtract =
        normalizer.has("subtract") ? static_cast<float>(normalizer.at("subtract").number(-kMaxFloat, kMaxFloat)) : 0;
    float divide = 1;
    if (normalizer.has("divide")) {
      const SpecValue value = normalizer.at("divide");
      divide = static_cast<float>(value.number(-kMaxFloat, kMaxFloat));
      if (divide == 0) value.expected("a number other than 0 (as float32)");
    }
    options.normalizer([subtract, divide](const at::Tensor& x) { return x.sub(subtract).div(divide); });
  }
  return options;
}

fc::VocabularyOptions VocabularyOptionsOf(const SpecValue& column) {
  fc::VocabularyOptions options;
  if (column.has("default_value")) options.default_value(column.at("default_value").integer(-1, est_apps::kMaxInt64));
  if (column.has("num_oov_buckets"))
    options.num_oov_buckets(column.at("num_oov_buckets").integer(0, est_apps::kMaxInt64));
  return options;
}

fc::EmbeddingColumnOptions EmbeddingOptionsOf(const SpecValue& column) {
  fc::EmbeddingColumnOptions options;
  if (column.has("combiner"))
    options.combiner(fc::CombinerNamed(column.at("combiner").choice({"mean", "sum", "sqrtn"}), column.path()));
  if (column.has("max_norm")) options.max_norm(column.at("max_norm").number(0, kMaxFloat, /*open_min=*/true));
  if (column.has("trainable")) options.trainable(column.at("trainable").boolean());
  return options;
}

}  // namespace

SpecColumns::SpecColumns(const SpecValue& columns, std::string base_dir) : base_dir_(std::move(base_dir)) {
  for (const auto& [name, column] : columns.members()) specs_.emplace(name, column);
  for (const auto& [name, column] : specs_) resolve(name, column);
}

const std::vector<fc::FeatureColumnPtr>& SpecColumns::resolve(const std::string& name, const SpecValue& ref) {
  const auto made = columns_.find(name);
  if (made != columns_.end()) return made->second;
  const auto spec = specs_.find(name);
  if (spec == specs_.end()) ref.fail("no column named '" + name + "' in columns");
  if (resolving_.count(name) > 0) ref.fail("column '" + name + "' refers back to itself through its references");
  resolving_.insert(name);
  auto columns = make(name, spec->second);
  resolving_.erase(name);
  return columns_.emplace(name, std::move(columns)).first->second;
}

fc::FeatureColumnPtr SpecColumns::single(const SpecValue& ref) {
  const std::string name = ref.string();
  const auto& columns = resolve(name, ref);
  if (columns.size() != 1) ref.fail("'" + name + "' is a shared_embeddings list; name it in an estimator's columns");
  return columns.front();
}

fc::CategoricalColumnPtr SpecColumns::categorical(const SpecValue& ref) {
  auto column = std::dynamic_pointer_cast<const fc::CategoricalColumn>(single(ref));
  if (column == nullptr) ref.expected("the name of a categorical column (a categorical_column_*, bucketized, crossed "
                                      "or weighted column)");
  return column;
}

std::vector<fc::FeatureColumnPtr> SpecColumns::make(const std::string& name, const SpecValue& entry) {
  entry.expect_object(ColumnKinds());
  if (entry.json().size() != 1) entry.expected("one column kind, e.g. {\"numeric_column\": {\"key\": \"age\"}}");
  const auto [kind, column] = entry.members().front();
  try {
    if (kind == "numeric_column") {
      const fc::NumericColumnOptions options = NumericOptionsOf(column);
      return {fc::numeric_column(column.at("key").string(), options)};
    }
    if (kind == "bucketized_column") {
      column.expect_object({"source_column", "boundaries"});
      const SpecValue source_ref = column.at("source_column");
      auto source = std::dynamic_pointer_cast<const fc::NumericColumn>(single(source_ref));
      if (source == nullptr) source_ref.expected("the name of a numeric_column");
      const SpecValue boundaries = column.at("boundaries");
      const std::vector<double> values = boundaries.numbers(-kMaxFloat, kMaxFloat);
      for (size_t i = 1; i < values.size(); ++i)
        if (values[i] <= values[i - 1]) boundaries.expected("boundaries in increasing order");
      return {fc::bucketized_column(source, values)};
    }
    if (kind == "categorical_column_with_hash_bucket") {
      column.expect_object({"key", "hash_bucket_size", "dtype"});
      return {fc::categorical_column_with_hash_bucket(column.at("key").string(),
                                                      column.at("hash_bucket_size").integer(1, est_apps::kMaxInt64),
                                                      IntegerDtype(column) ? fc::ValueType::kInt64
                                                                           : fc::ValueType::kString)};
    }
    if (kind == "categorical_column_with_vocabulary_list") {
      column.expect_object({"key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"});
      const SpecValue list = column.at("vocabulary_list");
      const bool integers = column.has("dtype") ? IntegerDtype(column)
                                                : !list.json().empty() && list.json().is_array() &&
                                                      list.json()[0].is_number_integer();
      const std::string key = column.at("key").string();
      if (integers)
        return {fc::categorical_column_with_vocabulary_list(
            key, list.integers(std::numeric_limits<int64_t>::min(), est_apps::kMaxInt64), VocabularyOptionsOf(column))};
      return {fc::categorical_column_with_vocabulary_list(key, list.strings(), VocabularyOptionsOf(column))};
    }
    if (kind == "categorical_column_with_vocabulary_file") {
      column.expect_object({"key", "vocabulary_file", "vocabulary_size", "dtype", "default_value", "num_oov_buckets"});
      std::filesystem::path file = column.at("vocabulary_file").string();
      if (file.is_relative()) file = std::filesystem::path(base_dir_) / file;
      std::optional<int64_t> size;
      if (column.has("vocabulary_size")) size = column.at("vocabulary_size").integer(1, est_apps::kMaxInt64);
      return {fc::categorical_column_with_vocabulary_file(column.at("key").string(), file.string(), size,
                                                          VocabularyOptionsOf(column), IntegerDtype(column))};
    }
    if (kind == "categorical_column_with_identity") {
      column.expect_object({"key", "num_buckets", "default_value"});
      const int64_t buckets = column.at("num_buckets").integer(1, est_apps::kMaxInt64);
      std::optional<int64_t> default_value;
      if (column.has("default_value")) default_value = column.at("default_value").integer(0, buckets - 1);
      return {fc::categorical_column_with_identity(column.at("key").string(), buckets, default_value)};
    }
    if (kind == "crossed_column") {
      column.expect_object({"keys", "hash_bucket_size", "hash_key"});
      std::vector<fc::CrossKey> keys;
      for (const SpecValue& key : column.at("keys").items(2)) {
        // A string is a raw feature, as in TensorFlow; {"column": NAME} is a column of the spec.
        if (key.json().is_string()) {
          keys.emplace_back(key.string());
          continue;
        }
        key.expect_object({"column"});
        keys.emplace_back(categorical(key.at("column")));
      }
      const int64_t buckets = column.at("hash_bucket_size").integer(1, est_apps::kMaxInt64);
      return {fc::crossed_column(keys, buckets,
                                 column.has("hash_key") ? column.at("hash_key").unsigned_integer()
                                                        : fc::kDefaultCrossHashKey)};
    }
    if (kind == "weighted_categorical_column") {
      column.expect_object({"categorical_column", "weight_feature_key"});
      return {fc::weighted_categorical_column(categorical(column.at("categorical_column")),
                                              column.at("weight_feature_key").string())};
    }
    if (kind == "indicator_column") {
      column.expect_object({"categorical_column"});
      return {fc::indicator_column(categorical(column.at("categorical_column")))};
    }
    if (kind == "embedding_column") {
      column.expect_object({"categorical_column", "dimension", "combiner", "max_norm", "trainable"});
      auto categorical_column = categorical(column.at("categorical_column"));
      return {fc::embedding_column(categorical_column, column.at("dimension").integer(1, est_apps::kMaxInt64),
                                   EmbeddingOptionsOf(column))};
    }
    column.expect_object({"categorical_columns", "dimension", "combiner", "max_norm", "trainable",
                          "shared_embedding_collection_name"});
    std::vector<fc::CategoricalColumnPtr> categorical_columns;
    for (const SpecValue& ref : column.at("categorical_columns").items(1))
      categorical_columns.push_back(categorical(ref));
    const auto shared = fc::shared_embeddings(
        categorical_columns, column.at("dimension").integer(1, est_apps::kMaxInt64), EmbeddingOptionsOf(column),
        column.has("shared_embedding_collection_name") ? column.at("shared_embedding_collection_name").string() : "");
    return {shared.begin(), shared.end()};
  } catch (const est::ConfigError& error) {
    // What a column's own checks find (a key of an unknown kind, a vocabulary file): named by
    // the column's place in the spec unless the message already names it.
    const std::string what = error.what();
    if (what.rfind(column.file() + ": ", 0) == 0) throw;
    column.fail(what);
  } catch (const est::Error& error) {
    column.fail(error.what());
  }
}

const std::vector<fc::FeatureColumnPtr>& SpecColumns::named(const SpecValue& ref) const {
  const std::string name = ref.string();
  const auto found = columns_.find(name);
  if (found == columns_.end()) ref.fail("no column named '" + name + "' in columns");
  return found->second;
}

std::vector<fc::FeatureColumnPtr> SpecColumns::feature_columns(const SpecValue& list) const {
  std::vector<fc::FeatureColumnPtr> columns;
  for (const SpecValue& ref : list.items(1)) {
    const auto& named_columns = named(ref);
    columns.insert(columns.end(), named_columns.begin(), named_columns.end());
  }
  return columns;
}

std::vector<fc::DenseColumnPtr> SpecColumns::dense_columns(const SpecValue& list) const {
  std::vector<fc::DenseColumnPtr> dense;
  for (const SpecValue& ref : list.items(1)) {
    for (const auto& column : named(ref)) {
      auto as_dense = std::dynamic_pointer_cast<const fc::DenseColumn>(column);
      if (as_dense == nullptr)
        ref.expected("the name of a dense column (numeric, bucketized, indicator or embedding); wrap a categorical "
                     "column in an indicator_column or embedding_column");
      dense.push_back(as_dense);
    }
  }
  return dense;
}

}  // namespace est_train
