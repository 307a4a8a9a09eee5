#include "estimator/feature_columns/input_layer.h"

#include <ATen/ops/cat.h>

#include <utility>

#include "common/error.h"

namespace est::feature_columns {

void RegisterColumnVariables(torch::nn::Module& module, const std::vector<DenseColumnPtr>& columns,
                             const std::string& prefix, ColumnVariables& variables) {
  for (const DenseColumnPtr& column : columns) {
    for (const ColumnVariable& variable : column->variables()) {
      const auto existing = variables.find(variable.name);
      if (existing != variables.end()) {
        EST_CHECK(existing->second.sizes() == at::IntArrayRef(variable.shape), ConfigError, "feature column \"",
                  column->name(), "\": variable \"", variable.name, "\" is shared with another shape");
        continue;
      }
      const std::string name = prefix + variable.name;
      EST_CHECK(name.find('.') == std::string::npos, ConfigError, "feature column \"", column->name(),
                "\": the variable name \"", name, "\" holds a '.', which a LibTorch parameter name cannot");
      at::Tensor value = variable.initial_value();
      variables.emplace(variable.name, variable.trainable ? module.register_parameter(name, value)
                                                          : module.register_buffer(name, value));
    }
  }
}

DenseFeatures::DenseFeatures(std::vector<DenseColumnPtr> columns, torch::nn::Module& owner, const std::string& prefix)
    : columns_(SortedByName(std::move(columns))) {
  EST_CHECK(!columns_.empty(), ConfigError, "DenseFeatures: no feature columns");
  RegisterColumnVariables(owner, columns_, prefix, variables_);
  for (const DenseColumnPtr& column : columns_) output_dimension_ += column->dense_dimension();
}

at::Tensor DenseFeatures::operator()(const ColumnInputs& inputs) const {
  std::vector<at::Tensor> parts;
  parts.reserve(columns_.size());
  for (const DenseColumnPtr& column : columns_) {
    at::Tensor part = column->dense_tensor(inputs, variables_);
    EST_ASSERT(part.dim() == 2 && part.size(0) == inputs.batch_size() && part.size(1) == column->dense_dimension(),
               "feature column \"", column->name(), "\" gave ", part.sizes());
    parts.push_back(std::move(part));
  }
  return parts.size() == 1 ? parts.front() : at::cat(parts, 1);
}

InputLayerImpl::InputLayerImpl(std::vector<DenseColumnPtr> columns, const std::string& prefix)
    : features_(std::move(columns), *this, prefix) {}

}  // namespace est::feature_columns
