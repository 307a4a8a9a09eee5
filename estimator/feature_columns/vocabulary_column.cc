#include "estimator/feature_columns/vocabulary_column.h"

#include <cstdint>
#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::feature_columns {

VocabularyCategoricalColumn::VocabularyCategoricalColumn(std::shared_ptr<const Vocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)) {
  EST_CHECK(vocabulary_ != nullptr, ConfigError, "vocabulary column: the vocabulary is null");
}

std::string VocabularyCategoricalColumn::use() const {
  // Two columns of one key may hold different vocabularies: the use names this one by what it
  // does, so that plans built from equal columns (the model's, the input's) agree.
  return "vocabulary:" + std::to_string(vocabulary_->fingerprint());
}

void VocabularyCategoricalColumn::plan_parsing(ParsingPlan& plan) const {
  if (vocabulary_->integer_keys()) {
    plan.add_integers(vocabulary_->key());
    return;
  }
  plan.add_strings(vocabulary_->key(), use(),
                   [vocabulary = vocabulary_](std::string_view value) { return vocabulary->id(value); });
}

CategoricalIds VocabularyCategoricalColumn::ids(const ColumnInputs& inputs) const {
  if (vocabulary_->integer_keys()) return vocabulary_->ids(inputs.integers(vocabulary_->key()));
  return inputs.string_ids(vocabulary_->key(), use());
}

std::shared_ptr<const VocabularyCategoricalColumn> categorical_column_with_vocabulary_list(
    std::string key, const std::vector<std::string>& vocabulary_list, VocabularyOptions options) {
  return std::make_shared<VocabularyCategoricalColumn>(std::make_shared<const Vocabulary>(Vocabulary::FromList(
      std::move(key), vocabulary_list, options.num_oov_buckets(), options.default_value())));
}

std::shared_ptr<const VocabularyCategoricalColumn> categorical_column_with_vocabulary_list(
    std::string key, const std::vector<int64_t>& vocabulary_list, VocabularyOptions options) {
  return std::make_shared<VocabularyCategoricalColumn>(std::make_shared<const Vocabulary>(Vocabulary::FromList(
      std::move(key), vocabulary_list, options.num_oov_buckets(), options.default_value())));
}

std::shared_ptr<const VocabularyCategoricalColumn> categorical_column_with_vocabulary_file(
    std::string key, const std::string& vocabulary_file, std::optional<int64_t> vocabulary_size,
    VocabularyOptions options, bool integer_keys) {
  return std::make_shared<VocabularyCategoricalColumn>(std::make_shared<const Vocabulary>(
      Vocabulary::FromFile(std::move(key), vocabulary_file, vocabulary_size, options.num_oov_buckets(),
                           options.default_value(), integer_keys)));
}

}  // namespace est::feature_columns
