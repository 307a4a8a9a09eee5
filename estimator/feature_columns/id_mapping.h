#pragma once
/// Internal to estimator/feature_columns/: applying a per-value id function to a batch.

#include <cstdint>
#include <functional>
#include <string>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns::detail {

/// `rows` with each string replaced by `id_of(string)`, in the padded layout.
CategoricalIds MapStringRows(const StringRows& rows, const std::function<int64_t(const std::string&)>& id_of);

/// `values` (checked by the caller) with each value within its row's length replaced by
/// `id_of(value)`; padding stays 0 and the lengths are shared.
CategoricalIds MapValues(const CategoricalIds& values, const std::function<int64_t(int64_t)>& id_of);

}  // namespace est::feature_columns::detail
