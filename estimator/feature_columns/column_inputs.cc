#include "estimator/feature_columns/column_inputs.h"

#include <ATen/ops/full.h>

#include "common/error.h"

namespace est::feature_columns {
namespace {

std::string LengthKey(const std::string& key) { return key + "_length"; }

/// `values` [batch, ...] as [batch, k]: [batch] becomes [batch, 1]; a batch without values
/// ([batch, 0]) stays as it is.
at::Tensor Rows(const at::Tensor& values) { return values.dim() == 1 ? values.unsqueeze(1) : values.flatten(1); }

}  // namespace

ColumnInputs::ColumnInputs(const Features& features, const ParsingPlan& plan) : features_(features), plan_(plan) {
  std::string first;
  for (const auto& [key, tensor] : features) {
    if (!plan.has(key) || !tensor.defined()) continue;
    EST_CHECK(tensor.dim() >= 1, DataError, "feature columns: feature \"", key, "\" is a scalar; a batch has the ",
              "examples along dim 0");
    if (first.empty()) {
      first = key;
      batch_size_ = tensor.size(0);
      continue;
    }
    EST_CHECK(tensor.size(0) == batch_size_, DataError, "feature columns: feature \"", key, "\" has ", tensor.size(0),
              " examples but \"", first, "\" has ", batch_size_);
  }
  EST_CHECK(!first.empty(), DataError, "feature columns: the batch holds none of the features the columns read");
}

const at::Tensor& ColumnInputs::feature(const std::string& key) const {
  const auto found = features_.find(key);
  EST_CHECK(found != features_.end() && found->second.defined(), DataError,
            "feature columns: the batch has no feature \"", key, "\"");
  return found->second;
}

const at::Tensor* ColumnInputs::length(const std::string& key) const {
  const auto found = features_.find(LengthKey(key));
  if (found == features_.end()) return nullptr;
  const at::Tensor& lengths = found->second;
  EST_CHECK(lengths.dim() == 1 && lengths.size(0) == batch_size_ && lengths.scalar_type() == at::kLong, DataError,
            "feature columns: \"", LengthKey(key), "\" has shape ", lengths.sizes(), " and dtype ",
            lengths.scalar_type(), " where int64 [", batch_size_, "] was expected");
  return &lengths;
}

at::Tensor ColumnInputs::numeric(const std::string& key) const {
  const at::Tensor& values = feature(key);
  EST_CHECK(!values.is_complex() && values.scalar_type() != at::kBool, DataError, "feature columns: numeric feature \"",
            key, "\" is ", values.scalar_type(), "; a numeric column reads real numbers");
  return Rows(values).to(at::kFloat);
}

CategoricalIds ColumnInputs::integers(const std::string& key) const {
  const at::Tensor& values = feature(key);
  if (const at::Tensor* lengths = length(key)) {
    CategoricalIds ids{Rows(values).to(at::kLong), *lengths, {}};
    CheckLayout(ids, key);
    return ids;
  }
  return DropIgnoredValues(values, key);
}

CategoricalIds ColumnInputs::string_ids(const std::string& key, const std::string& use) const {
  const int64_t slot = plan_.slot(key, use);
  const int64_t slots = plan_.slots(key);
  at::Tensor values = feature(key);
  const at::Tensor* lengths = length(key);
  EST_CHECK(lengths != nullptr, DataError, "feature columns: string feature \"", key, "\" comes without \"",
            LengthKey(key), "\"; parse it by the ParsingPlan's spec and batch it with padded_batch");
  EST_CHECK(values.scalar_type() == at::kLong && values.dim() == (slots > 1 ? 3 : 2) &&
                (slots == 1 || values.size(2) == slots),
            DataError, "feature columns: string feature \"", key, "\" is ", values.scalar_type(), " ", values.sizes(),
            "; the plan parses it to int64 [batch, values", slots > 1 ? ", " + std::to_string(slots) : std::string(),
            "]");
  if (slots > 1) values = values.select(2, slot);
  CategoricalIds ids{values.contiguous(), *lengths, {}};
  CheckLayout(ids, key);
  return ids;
}

std::pair<at::Tensor, at::Tensor> ColumnInputs::floats(const std::string& key) const {
  const at::Tensor values = Rows(feature(key)).to(at::kFloat);
  if (const at::Tensor* lengths = length(key)) return {values, *lengths};
  return {values, at::full({batch_size_}, values.size(1), at::kLong)};
}

}  // namespace est::feature_columns
