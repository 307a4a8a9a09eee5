#include "estimator/feature_columns/indicator_column.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/zeros.h>

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"

namespace est::feature_columns {

IndicatorColumn::IndicatorColumn(CategoricalColumnPtr categorical) : categorical_(std::move(categorical)) {
  EST_CHECK(categorical_ != nullptr, ConfigError, "indicator_column: the categorical column is null");
}

at::Tensor IndicatorColumn::dense_tensor(const ColumnInputs& inputs, const ColumnVariables&) const {
  const CategoricalIds ids = categorical_->ids(inputs);
  const int64_t buckets = categorical_->num_buckets();
  const at::Tensor positions = at::arange(ids.max_values(), ids.ids.options());
  const at::Tensor keep = positions.unsqueeze(0).lt(ids.lengths.unsqueeze(1)).logical_and_(ids.ids.ge(0));
  const at::Tensor values = ids.weights.defined() ? ids.weights : keep.to(at::kFloat);
  const at::Tensor kept_ids = ids.ids.masked_fill(keep.logical_not(), 0);
  EST_CHECK(ids.ids.masked_select(keep).lt(buckets).all().item<bool>(), DataError, "indicator_column \"", name(),
            "\": an id is outside [0, ", buckets, ")");
  return at::zeros({ids.batch_size(), buckets}, at::kFloat)
      .scatter_add_(1, kept_ids, values.mul(keep.to(at::kFloat)));
}

std::shared_ptr<const IndicatorColumn> indicator_column(CategoricalColumnPtr categorical) {
  return std::make_shared<IndicatorColumn>(std::move(categorical));
}

}  // namespace est::feature_columns
