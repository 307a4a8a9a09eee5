#include "estimator/feature_columns/embedding_lookup.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace est::feature_columns {

Combiner CombinerNamed(const std::string& name, const std::string& what) {
  if (name == "sum") return Combiner::kSum;
  if (name == "mean") return Combiner::kMean;
  if (name == "sqrtn") return Combiner::kSqrtn;
  EST_THROW(ConfigError, what, ": combiner \"", name, "\"; expected \"sum\", \"mean\" or \"sqrtn\"");
}

namespace {

/// What embedding_bag takes of one batch of ids: the kept ids in row order, each row's first
/// position among them, and each kept id's combined weight; and each kept id's row.
struct BagInputs {
  at::Tensor ids;
  at::Tensor offsets;
  at::Tensor weights;
  at::Tensor rows;
};

/// The ids kept (at a position below the row's length, not negative, of a weight above 0) and
/// their weights combined per row, computed in one pass on the host: a few hundred values a
/// batch, where a dozen tensor operations a column cost more than the lookup itself. The
/// weights are T, the table's type; sums run in row order, as TensorFlow's segment sums.
template <typename T>
BagInputs KeptIds(const CategoricalIds& given, Combiner combiner, const std::string& column, int64_t num_buckets) {
  const at::Tensor ids = given.ids.to(at::kCPU).contiguous();
  const at::Tensor lengths = given.lengths.to(at::kCPU).contiguous();
  const at::Tensor weights =
      given.weights.defined() ? given.weights.to(at::kCPU, c10::CppTypeToScalarType<T>::value).contiguous() : at::Tensor();
  const int64_t batch = ids.size(0);
  const int64_t width = ids.size(1);
  const int64_t* id = ids.data_ptr<int64_t>();
  const int64_t* length = lengths.data_ptr<int64_t>();
  const T* weight = weights.defined() ? weights.data_ptr<T>() : nullptr;
  BagInputs bag{at::empty({batch * width}, at::kLong), at::empty({batch}, at::kLong),
                at::empty({batch * width}, c10::CppTypeToScalarType<T>::value), at::empty({batch * width}, at::kLong)};
  int64_t* kept_id = bag.ids.data_ptr<int64_t>();
  int64_t* kept_row = bag.rows.data_ptr<int64_t>();
  int64_t* offset = bag.offsets.data_ptr<int64_t>();
  T* kept_weight = bag.weights.data_ptr<T>();
  int64_t kept = 0;
  for (int64_t row = 0; row < batch; ++row) {
    offset[row] = kept;
    const int64_t first = kept;
    T total = 0;
    for (int64_t i = 0; i < std::min(length[row], width); ++i) {
      const int64_t value = id[row * width + i];
      const T w = weight ? weight[row * width + i] : T(1);
      if (value < 0 || !(w > 0)) continue;
      EST_CHECK(value < num_buckets, DataError, "feature column \"", column, "\": id ", value, " is outside [0, ",
                num_buckets, ")");
      kept_id[kept] = value;
      kept_row[kept] = row;
      kept_weight[kept] = w;
      total += combiner == Combiner::kSqrtn ? w * w : w;
      ++kept;
    }
    if (combiner == Combiner::kSum) continue;
    const T norm = std::max(combiner == Combiner::kSqrtn ? std::sqrt(total) : total, T(1e-30));
    for (int64_t k = first; k < kept; ++k) kept_weight[k] /= norm;
  }
  bag.ids = bag.ids.narrow(0, 0, kept);
  bag.weights = bag.weights.narrow(0, 0, kept);
  bag.rows = bag.rows.narrow(0, 0, kept);
  return bag;
}

}  // namespace

at::Tensor SafeEmbeddingLookupSparse(const at::Tensor& table, const CategoricalIds& ids, Combiner combiner,
                                     const std::string& column, std::optional<double> max_norm) {
  CheckLayout(ids, column);
  EST_CHECK(table.scalar_type() == at::kFloat || table.scalar_type() == at::kDouble, ConfigError,
            "feature column \"", column, "\": the table is ", table.scalar_type(), "; expected float32 or float64");
  const BagInputs bag = table.scalar_type() == at::kFloat ? KeptIds<float>(ids, combiner, column, table.size(0))
                                                          : KeptIds<double>(ids, combiner, column, table.size(0));
  const at::Tensor flat_ids = bag.ids.to(table.device());
  const at::Tensor flat_weights = bag.weights.to(table.device());
  if (max_norm) {
    const at::Tensor rows = bag.rows.to(table.device());
    at::Tensor looked_up = table.index_select(0, flat_ids);
    const at::Tensor norms = looked_up.norm(2, {1}, true);
    looked_up = looked_up.mul(norms.clamp_min(*max_norm).reciprocal().mul(*max_norm));
    return at::zeros({ids.batch_size(), table.size(1)}, table.options())
        .index_add(0, rows, looked_up.mul(flat_weights.unsqueeze(1)));
  }
  return std::get<0>(at::embedding_bag(table, flat_ids, bag.offsets.to(table.device()), /*scale_grad_by_freq=*/false,
                                       /*mode=*/0, /*sparse=*/false, flat_weights));
}

}  // namespace est::feature_columns
