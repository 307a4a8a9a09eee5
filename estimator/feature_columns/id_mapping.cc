#include "estimator/feature_columns/id_mapping.h"

#include <ATen/ATen.h>

namespace est::feature_columns::detail {

CategoricalIds MapStringRows(const StringRows& rows, const std::function<int64_t(const std::string&)>& id_of) {
  IntRows ids(rows.size());
  for (size_t b = 0; b < rows.size(); ++b) {
    ids[b].reserve(rows[b].size());
    for (const std::string& value : rows[b]) ids[b].push_back(id_of(value));
  }
  return IdsFromRows(ids);
}

CategoricalIds MapValues(const CategoricalIds& values, const std::function<int64_t(int64_t)>& id_of) {
  const at::Tensor in = values.ids.cpu().contiguous();
  const at::Tensor lengths = values.lengths.cpu().contiguous();
  CategoricalIds out;
  out.ids = at::zeros_like(in);
  out.lengths = lengths;
  const auto value_of = in.accessor<int64_t, 2>();
  const auto length_of = lengths.accessor<int64_t, 1>();
  auto id = out.ids.accessor<int64_t, 2>();
  for (int64_t b = 0; b < in.size(0); ++b)
    for (int64_t i = 0; i < length_of[b]; ++i) id[b][i] = id_of(value_of[b][i]);
  return out;
}

}  // namespace est::feature_columns::detail
