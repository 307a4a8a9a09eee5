#pragma once
/// tf.feature_column.categorical_column_with_identity: integer values that are their own ids.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "estimator/feature_columns/feature_column.h"
#include "estimator/feature_columns/identity.h"

namespace est::feature_columns {

/// Integer values in [0, num_buckets), out-of-range ones mapped to the default (Identity).
class IdentityCategoricalColumn : public CategoricalColumn {
 public:
  /// ConfigError as Identity.
  IdentityCategoricalColumn(std::string key, int64_t num_buckets, std::optional<int64_t> default_value);

  std::string name() const override { return identity_.key(); }
  void plan_parsing(ParsingPlan& plan) const override;
  int64_t num_buckets() const override { return identity_.num_buckets(); }
  CategoricalIds ids(const ColumnInputs& inputs) const override;

 private:
  Identity identity_;
};

/// tf.feature_column.categorical_column_with_identity(key, num_buckets, default_value).
std::shared_ptr<const IdentityCategoricalColumn> categorical_column_with_identity(
    std::string key, int64_t num_buckets, std::optional<int64_t> default_value = std::nullopt);

}  // namespace est::feature_columns
