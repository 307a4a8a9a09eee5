#include "estimator/feature_columns/numeric_column.h"

#include <ATen/ops/tensor.h>

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::feature_columns {

NumericColumn::NumericColumn(std::string key, NumericColumnOptions options)
    : key_(std::move(key)), options_(std::move(options)) {
  EST_CHECK(!key_.empty(), ConfigError, "numeric_column: the key is empty");
  for (int64_t size : options_.shape()) {
    EST_CHECK(size >= 1, ConfigError, "numeric_column \"", key_, "\": shape size ", size, "; sizes must be at least 1");
  }
  const size_t defaults = options_.default_value().size();
  EST_CHECK(defaults <= 1 || static_cast<int64_t>(defaults) == dense_dimension(), ConfigError, "numeric_column \"",
            key_, "\": ", defaults, " default values for a shape of ", dense_dimension(), " elements");
}

void NumericColumn::plan_parsing(ParsingPlan& plan) const {
  at::Tensor default_value;
  if (!options_.default_value().empty()) {
    default_value = at::tensor(options_.default_value(), at::kDouble).to(at::kFloat);
    default_value = options_.default_value().size() == 1 ? default_value.reshape({})
                                                          : default_value.reshape(options_.shape());
  }
  plan.add_numeric(key_, options_.shape(), default_value);
}

int64_t NumericColumn::dense_dimension() const {
  int64_t elements = 1;
  for (int64_t size : options_.shape()) elements *= size;
  return elements;
}

at::Tensor NumericColumn::values(const ColumnInputs& inputs) const {
  const at::Tensor flat = inputs.numeric(key_);
  EST_CHECK(flat.size(1) == dense_dimension(), DataError, "numeric_column \"", key_, "\": ", flat.size(1),
            " values per example where its shape holds ", dense_dimension());
  std::vector<int64_t> shape{inputs.batch_size()};
  shape.insert(shape.end(), options_.shape().begin(), options_.shape().end());
  at::Tensor shaped = flat.reshape(shape);
  if (options_.normalizer()) shaped = options_.normalizer()(shaped).to(at::kFloat);
  return shaped;
}

at::Tensor NumericColumn::dense_tensor(const ColumnInputs& inputs, const ColumnVariables&) const {
  return values(inputs).reshape({inputs.batch_size(), dense_dimension()});
}

std::shared_ptr<const NumericColumn> numeric_column(std::string key, NumericColumnOptions options) {
  return std::make_shared<NumericColumn>(std::move(key), std::move(options));
}

}  // namespace est::feature_columns
