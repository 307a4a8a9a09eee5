#include "estimator/feature_columns/categorical_ids.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/error.h"

namespace est::feature_columns {

int64_t CategoricalIds::batch_size() const { return ids.size(0); }

int64_t CategoricalIds::max_values() const { return ids.size(1); }

CategoricalIds IdsFromRows(const IntRows& rows) {
  size_t longest = 0;
  for (const std::vector<int64_t>& row : rows) longest = std::max(longest, row.size());
  const auto batch = static_cast<int64_t>(rows.size());
  CategoricalIds out;
  out.ids = at::zeros({batch, static_cast<int64_t>(longest)}, at::kLong);
  out.lengths = at::empty({batch}, at::kLong);
  auto ids = out.ids.accessor<int64_t, 2>();
  auto lengths = out.lengths.accessor<int64_t, 1>();
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int64_t>& row = rows[static_cast<size_t>(b)];
    lengths[b] = static_cast<int64_t>(row.size());
    for (size_t i = 0; i < row.size(); ++i) ids[b][static_cast<int64_t>(i)] = row[i];
  }
  return out;
}

IntRows IdsToRows(const CategoricalIds& ids) {
  CheckLayout(ids, "IdsToRows");
  const at::Tensor values = ids.ids.cpu().contiguous();
  const at::Tensor lengths = ids.lengths.cpu().contiguous();
  const auto values_of = values.accessor<int64_t, 2>();
  const auto length_of = lengths.accessor<int64_t, 1>();
  IntRows rows(static_cast<size_t>(ids.batch_size()));
  for (int64_t b = 0; b < ids.batch_size(); ++b)
    for (int64_t i = 0; i < length_of[b]; ++i) rows[static_cast<size_t>(b)].push_back(values_of[b][i]);
  return rows;
}

void CheckLayout(const CategoricalIds& ids, const std::string& column) {
  EST_CHECK(ids.ids.defined() && ids.ids.dim() == 2 && ids.ids.scalar_type() == at::kLong, DataError, "column '",
            column, "': ids must be an int64 [batch, max_values] tensor, got ",
            ids.ids.defined() ? c10::toString(ids.ids.scalar_type()) : "an undefined tensor", " of shape ",
            ids.ids.defined() ? ids.ids.sizes() : at::IntArrayRef{});
  EST_CHECK(ids.lengths.defined() && ids.lengths.scalar_type() == at::kLong &&
                ids.lengths.sizes() == at::IntArrayRef{ids.batch_size()},
            DataError, "column '", column, "': lengths must be an int64 [", ids.batch_size(), "] tensor, one per row");
  if (ids.lengths.numel() > 0) {
    const int64_t shortest = ids.lengths.min().item<int64_t>();
    const int64_t longest = ids.lengths.max().item<int64_t>();
    EST_CHECK(shortest >= 0 && longest <= ids.max_values(), DataError, "column '", column,
              "': row lengths must lie in [0, ", ids.max_values(), "] (the width of ids), got [", shortest, ", ",
              longest, "]");
  }
  const bool weights_fit =
      !ids.weights.defined() || (ids.weights.scalar_type() == at::kFloat && ids.weights.sizes() == ids.ids.sizes());
  EST_CHECK(weights_fit, DataError, "column '", column, "': weights must be float32 of the ids' shape ",
            ids.ids.sizes(), ", got ", c10::toString(ids.weights.scalar_type()), " ", ids.weights.sizes());
}

CategoricalIds DropIgnoredValues(const at::Tensor& dense, const std::string& column, int64_t ignore_value) {
  EST_CHECK(dense.defined() && (dense.dim() == 1 || dense.dim() == 2) &&
                at::isIntegralType(dense.scalar_type(), /*includeBool=*/false),
            DataError, "column '", column, "': a dense input must be an integer [batch] or [batch, k] tensor, got ",
            dense.defined() ? c10::toString(dense.scalar_type()) : "an undefined tensor", " of shape ",
            dense.defined() ? dense.sizes() : at::IntArrayRef{});
  const at::Tensor values = (dense.dim() == 1 ? dense.unsqueeze(1) : dense).to(at::kLong).cpu().contiguous();
  const auto value_of = values.accessor<int64_t, 2>();
  IntRows rows(static_cast<size_t>(values.size(0)));
  for (int64_t b = 0; b < values.size(0); ++b)
    for (int64_t i = 0; i < values.size(1); ++i)
      if (value_of[b][i] != ignore_value) rows[static_cast<size_t>(b)].push_back(value_of[b][i]);
  return IdsFromRows(rows);
}

StringRows DropIgnoredValues(const StringRows& dense) {
  StringRows rows(dense.size());
  for (size_t b = 0; b < dense.size(); ++b)
    for (const std::string& value : dense[b])
      if (!value.empty()) rows[b].push_back(value);
  return rows;
}

CategoricalIds WithWeights(CategoricalIds ids, const at::Tensor& weights, const at::Tensor& weight_lengths,
                           const std::string& column) {
  EST_CHECK(weights.defined() && at::isFloatingType(weights.scalar_type()) && weights.sizes() == ids.ids.sizes(),
            DataError, "column '", column, "': weights must be floating-point values of the ids' shape ",
            ids.ids.sizes(), ", got ", weights.defined() ? c10::toString(weights.scalar_type()) : "an undefined tensor",
            " of shape ", weights.defined() ? weights.sizes() : at::IntArrayRef{});
  EST_CHECK(weight_lengths.defined() && weight_lengths.sizes() == ids.lengths.sizes() &&
                weight_lengths.to(at::kLong).equal(ids.lengths),
            DataError, "column '", column, "': every row must have as many weights as ids");
  ids.weights = weights.to(at::kFloat);
  CheckLayout(ids, column);
  return ids;
}

}  // namespace est::feature_columns
