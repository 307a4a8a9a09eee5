#include "estimator/feature_columns/embedding_lookup.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/embedding_bag.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>

#include "common/error.h"

namespace est::feature_columns {

Combiner CombinerNamed(const std::string& name, const std::string& what) {
  if (name == "sum") return Combiner::kSum;
  if (name == "mean") return Combiner::kMean;
  if (name == "sqrtn") return Combiner::kSqrtn;
  EST_THROW(ConfigError, what, ": combiner \"", name, "\"; expected \"sum\", \"mean\" or \"sqrtn\"");
}

at::Tensor SafeEmbeddingLookupSparse(const at::Tensor& table, const CategoricalIds& ids, Combiner combiner,
                                     const std::string& column, std::optional<double> max_norm) {
  CheckLayout(ids, column);
  const int64_t batch = ids.batch_size();
  const at::Tensor positions = at::arange(ids.max_values(), ids.ids.options());
  at::Tensor keep = positions.unsqueeze(0).lt(ids.lengths.unsqueeze(1)).logical_and_(ids.ids.ge(0));
  at::Tensor weights = ids.weights.defined() ? ids.weights.to(table.scalar_type())
                                             : at::ones_like(ids.ids, table.options());
  if (ids.weights.defined()) keep.logical_and_(weights.gt(0));
  const at::Tensor flat_ids = ids.ids.masked_select(keep);
  if (flat_ids.numel() > 0) {
    const int64_t largest = flat_ids.max().item<int64_t>();
    EST_CHECK(largest < table.size(0), DataError, "feature column \"", column, "\": id ", largest,
              " is outside [0, ", table.size(0), ")");
  }
  at::Tensor kept_weights = weights.mul(keep.to(weights.scalar_type()));
  if (combiner == Combiner::kMean) {
    kept_weights = kept_weights.div(kept_weights.sum(1, true).clamp_min(1e-30));
  } else if (combiner == Combiner::kSqrtn) {
    kept_weights = kept_weights.div(kept_weights.square().sum(1, true).sqrt().clamp_min(1e-30));
  }
  const at::Tensor flat_weights = kept_weights.masked_select(keep);
  if (max_norm) {
    const at::Tensor rows = keep.nonzero().select(1, 0);
    at::Tensor looked_up = table.index_select(0, flat_ids);
    const at::Tensor norms = looked_up.norm(2, {1}, true);
    looked_up = looked_up.mul(norms.clamp_min(*max_norm).reciprocal().mul(*max_norm));
    return at::zeros({batch, table.size(1)}, table.options())
        .index_add(0, rows, looked_up.mul(flat_weights.unsqueeze(1)));
  }
  const at::Tensor offsets = keep.sum(1).cumsum(0).sub(keep.sum(1));
  return std::get<0>(at::embedding_bag(table, flat_ids, offsets, /*scale_grad_by_freq=*/false, /*mode=*/0,
                                       /*sparse=*/false, flat_weights));
}

}  // namespace est::feature_columns
