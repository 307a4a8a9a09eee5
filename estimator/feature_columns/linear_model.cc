#include "estimator/feature_columns/linear_model.h"

#include <ATen/ops/zeros.h>

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/input_layer.h"

namespace est::feature_columns {
namespace {

constexpr const char* kLinearScope = "linear_model/";

}  // namespace

LinearModelImpl::LinearModelImpl(std::vector<FeatureColumnPtr> columns, int64_t units, Combiner sparse_combiner)
    : columns_(SortedByName(std::move(columns))), sparse_combiner_(sparse_combiner) {
  EST_CHECK(!columns_.empty(), ConfigError, "LinearModel: no feature columns");
  EST_CHECK(units >= 1, ConfigError, "LinearModel: units is ", units, "; it must be at least 1");
  std::vector<DenseColumnPtr> dense_with_variables;
  for (const FeatureColumnPtr& column : columns_) {
    int64_t rows = 0;
    if (const auto* categorical = dynamic_cast<const CategoricalColumn*>(column.get())) {
      rows = categorical->num_buckets();
    } else if (auto dense = std::dynamic_pointer_cast<const DenseColumn>(column)) {
      rows = dense->dense_dimension();
      dense_with_variables.push_back(dense);
    } else {
      EST_THROW(ConfigError, "LinearModel: column \"", column->name(), "\" is neither categorical nor dense");
    }
    const std::string name = std::string(kLinearScope) + column->name() + "/weights";
    EST_CHECK(name.find('.') == std::string::npos, ConfigError, "LinearModel: column \"", column->name(),
              "\" holds a '.', which a LibTorch parameter name cannot");
    weights_.push_back(register_parameter(name, at::zeros({rows, units}, at::kFloat)));
  }
  RegisterColumnVariables(*this, dense_with_variables, std::string(kLinearScope), variables_);
  bias_ = register_parameter(std::string(kLinearScope) + "bias_weights", at::zeros({units}, at::kFloat));
}

at::Tensor LinearModelImpl::forward(const ColumnInputs& inputs) {
  at::Tensor sum = bias_.unsqueeze(0).expand({inputs.batch_size(), bias_.size(0)});
  for (size_t i = 0; i < columns_.size(); ++i) {
    const FeatureColumn* column = columns_[i].get();
    if (const auto* categorical = dynamic_cast<const CategoricalColumn*>(column)) {
      sum = sum.add(SafeEmbeddingLookupSparse(weights_[i], categorical->ids(inputs), sparse_combiner_,
                                              column->name()));
    } else {
      const auto* dense = dynamic_cast<const DenseColumn*>(column);
      sum = sum.add(dense->dense_tensor(inputs, variables_).matmul(weights_[i]));
    }
  }
  return sum;
}

at::Tensor LinearModelImpl::weights(const std::string& column) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i]->name() == column) return weights_[i];
  }
  EST_THROW(ConfigError, "LinearModel: no column \"", column, "\"");
}

}  // namespace est::feature_columns
