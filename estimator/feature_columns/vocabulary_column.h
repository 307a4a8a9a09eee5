#pragma once
/// tf.feature_column.categorical_column_with_vocabulary_list and _with_vocabulary_file: ids by
/// a value's place in a vocabulary, out-of-vocabulary values hashed into extra buckets.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/arg.h>

#include "estimator/feature_columns/feature_column.h"
#include "estimator/feature_columns/vocabulary.h"

namespace est::feature_columns {

/// What the vocabulary columns take besides the vocabulary, with TensorFlow's defaults.
struct VocabularyOptions {
  /// The id of a value outside the vocabulary when there are no OOV buckets (-1: none, the
  /// value is dropped by embeddings and the linear model).
  TORCH_ARG(int64_t, default_value) = -1;
  /// Extra buckets that out-of-vocabulary values hash into.
  TORCH_ARG(int64_t, num_oov_buckets) = 0;
};

/// A vocabulary lookup: string vocabularies parse values straight to ids; integer ones look
/// values up when the model reads them.
class VocabularyCategoricalColumn : public CategoricalColumn {
 public:
  /// The column over `vocabulary`.
  explicit VocabularyCategoricalColumn(std::shared_ptr<const Vocabulary> vocabulary);

  std::string name() const override { return vocabulary_->key(); }
  void plan_parsing(ParsingPlan& plan) const override;
  int64_t num_buckets() const override { return vocabulary_->num_buckets(); }
  CategoricalIds ids(const ColumnInputs& inputs) const override;

  /// The vocabulary.
  const Vocabulary& vocabulary() const { return *vocabulary_; }

 private:
  std::string use() const;

  std::shared_ptr<const Vocabulary> vocabulary_;
};

/// categorical_column_with_vocabulary_list(key, vocabulary_list) of strings.
std::shared_ptr<const VocabularyCategoricalColumn> categorical_column_with_vocabulary_list(
    std::string key, const std::vector<std::string>& vocabulary_list, VocabularyOptions options = {});
/// categorical_column_with_vocabulary_list(key, vocabulary_list) of integers (dtype int64).
std::shared_ptr<const VocabularyCategoricalColumn> categorical_column_with_vocabulary_list(
    std::string key, const std::vector<int64_t>& vocabulary_list, VocabularyOptions options = {});
/// categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size, dtype): one
/// entry a line; `type` kInt64 reads each line as an integer.
std::shared_ptr<const VocabularyCategoricalColumn> categorical_column_with_vocabulary_file(
    std::string key, const std::string& vocabulary_file, std::optional<int64_t> vocabulary_size = std::nullopt,
    VocabularyOptions options = {}, bool integer_keys = false);

}  // namespace est::feature_columns
