#include "estimator/batch_signature.h"

#include "common/error.h"

namespace est {
namespace {

constexpr char kLabelsName[] = "labels";

/// "Float [64, 28, 28]", or "undefined" for a missing tensor.
std::string Describe(bool defined, at::ScalarType dtype, at::IntArrayRef sizes) {
  if (!defined) return "undefined";
  return Concat(dtype, " ", sizes);
}

/// True when `tensor` matches `expected` in dtype, rank and every dimension but the first.
bool Matches(const at::Tensor& tensor, bool defined, at::ScalarType dtype, const std::vector<int64_t>& sizes) {
  if (tensor.defined() != defined) return false;
  if (!defined) return true;
  if (tensor.scalar_type() != dtype || tensor.dim() != static_cast<int64_t>(sizes.size())) return false;
  const at::IntArrayRef actual = tensor.sizes();
  for (size_t d = 1; d < sizes.size(); ++d) {
    if (actual[d] != sizes[d]) return false;
  }
  return true;
}

std::string NamesOf(const Features& features) {
  std::string names;
  for (const auto& [name, tensor] : features) names += (names.empty() ? "'" : ", '") + name + "'";
  return "{" + names + "}";
}

}  // namespace

void BatchSignature::record(const data::Element& batch) {
  auto entry_of = [](const std::string& name, const at::Tensor& tensor) {
    Entry entry;
    entry.name = name;
    entry.defined = tensor.defined();
    if (entry.defined) {
      entry.dtype = tensor.scalar_type();
      entry.sizes = tensor.sizes().vec();
    }
    return entry;
  };
  for (const auto& [name, tensor] : batch.features) features_.push_back(entry_of(name, tensor));
  labels_ = entry_of(kLabelsName, batch.labels);
  recorded_ = true;
}

void BatchSignature::check(const data::Element& batch, int64_t step) {
  if (!recorded_) {
    record(batch);
    return;
  }
  if (batch.features.size() != features_.size()) throw_names_changed(batch, step);
  auto expected = features_.begin();
  for (const auto& [name, tensor] : batch.features) {
    if (name != expected->name) throw_names_changed(batch, step);
    check_tensor(*expected++, tensor, step);
  }
  check_tensor(labels_, batch.labels, step);
}

void BatchSignature::check(const std::vector<data::Element>& batches, int64_t step) {
  for (const data::Element& batch : batches) check(batch, step);
}

void BatchSignature::check_tensor(const Entry& expected, const at::Tensor& tensor, int64_t step) const {
  if (Matches(tensor, expected.defined, expected.dtype, expected.sizes)) return;
  const std::string what = &expected == &labels_ ? std::string("the labels") : "feature '" + expected.name + "'";
  EST_THROW(DataError, "input_fn changed ", what, " at step ", step, ": the first batch had ",
            Describe(expected.defined, expected.dtype, expected.sizes), ", this batch has ",
            Describe(tensor.defined(), tensor.defined() ? tensor.scalar_type() : at::ScalarType::Undefined,
                     tensor.defined() ? tensor.sizes() : at::IntArrayRef{}),
            "; every batch must keep the first batch's dtype and shape, except the batch (first) dimension");
}

void BatchSignature::throw_names_changed(const data::Element& batch, int64_t step) const {
  std::string first;
  for (const Entry& entry : features_) first += (first.empty() ? "'" : ", '") + entry.name + "'";
  EST_THROW(DataError, "input_fn changed its feature names at step ", step, ": the first batch had {", first,
            "}, this batch has ", NamesOf(batch.features), "; every batch must have the first batch's features");
}

}  // namespace est
