#include "estimator/feature_columns/crosser.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/fingerprint.h"
#include "estimator/feature_columns/id_mapping.h"

namespace est::feature_columns {

namespace {

// One input's values and lengths, contiguous on the CPU, for reading row by row.
struct CrossRows {
  at::Tensor values;
  at::Tensor lengths;

  int64_t length(int64_t row) const { return lengths.data_ptr<int64_t>()[row]; }
  int64_t value(int64_t row, int64_t index) const { return values.data_ptr<int64_t>()[row * values.size(1) + index]; }
};

// Advances `digits` to the next combination, the last digit fastest; false after the last.
bool NextCombination(std::vector<int64_t>& digits, const std::vector<int64_t>& counts) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (++digits[i] < counts[i]) return true;
    digits[i] = 0;
  }
  return false;
}

}  // namespace

CrossInput CrossInput::Strings(const StringRows& rows, bool dense) {
  return CrossInput{
      detail::MapStringRows(rows, [](const std::string& value) { return static_cast<int64_t>(Fingerprint64(value)); }),
      dense};
}

CrossInput CrossInput::Ids(CategoricalIds ids, bool dense) { return CrossInput{std::move(ids), dense}; }

Crosser::Crosser(std::string name, int64_t hash_bucket_size, uint64_t hash_key)
    : name_(std::move(name)), hash_bucket_size_(hash_bucket_size),
      hash_key_(hash_key == 0 ? kDefaultCrossHashKey : hash_key) {
  EST_CHECK(hash_bucket_size_ >= 1, ConfigError, "crossed_column '", name_,
            "': hash_bucket_size must be at least 1, got ", hash_bucket_size_);
}

int64_t Crosser::id(const std::vector<int64_t>& features) const {
  uint64_t hash = hash_key_;
  for (int64_t feature : features) hash = FingerprintCat64(hash, static_cast<uint64_t>(feature));
  return static_cast<int64_t>(hash % static_cast<uint64_t>(hash_bucket_size_));
}

CategoricalIds Crosser::ids(const std::vector<CrossInput>& inputs) const {
  EST_CHECK(inputs.size() >= 2, ConfigError, "crossed_column '", name_, "': crosses at least two inputs, got ",
            inputs.size());
  std::vector<CrossRows> ordered;
  for (bool dense : {false, true})
    for (const CrossInput& input : inputs)
      if (input.dense == dense) {
        CheckLayout(input.values, name_);
        EST_CHECK(!input.values.weights.defined(), ConfigError, "crossed_column '", name_,
                  "': a weighted categorical column cannot be crossed (TensorFlow refuses its weights too)");
        ordered.push_back({input.values.ids.cpu().contiguous(), input.values.lengths.cpu().contiguous()});
      }
  const int64_t batch = ordered.front().values.size(0);
  for (size_t i = 0; i < ordered.size(); ++i)
    EST_CHECK(ordered[i].values.size(0) == batch, DataError, "crossed_column '", name_, "': input ", i, " has ",
              ordered[i].values.size(0), " rows where the first has ", batch);
  IntRows rows(static_cast<size_t>(batch));
  std::vector<int64_t> counts(ordered.size());
  std::vector<int64_t> digits(ordered.size());
  std::vector<int64_t> features(ordered.size());
  for (int64_t b = 0; b < batch; ++b) {
    bool every_input_has_values = true;
    for (size_t i = 0; i < ordered.size(); ++i) {
      counts[i] = ordered[i].length(b);
      every_input_has_values = every_input_has_values && counts[i] > 0;
    }
    if (!every_input_has_values) continue;
    std::fill(digits.begin(), digits.end(), 0);
    do {
      for (size_t i = 0; i < ordered.size(); ++i) features[i] = ordered[i].value(b, digits[i]);
      rows[static_cast<size_t>(b)].push_back(id(features));
    } while (NextCombination(digits, counts));
  }
  return IdsFromRows(rows);
}

}  // namespace est::feature_columns
