#include "data/ops/stack_tensors.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

#include <cstring>

namespace est::data {
namespace {

/// True when the bytes of `tensor` in memory are exactly its values, in order.
bool IsPlainContiguousCpu(const at::Tensor& tensor) {
  return tensor.device().is_cpu() && tensor.layout() == at::kStrided && !tensor.is_quantized() &&
         tensor.is_contiguous() && !tensor.is_conj() && !tensor.is_neg() &&
         !tensor.requires_grad();
}

}  // namespace

at::Tensor StackTensors(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    if (!IsPlainContiguousCpu(tensor)) return at::stack(tensors);
  }
  const at::Tensor& first = tensors.front();
  std::vector<int64_t> shape;
  shape.reserve(first.dim() + 1);
  shape.push_back(static_cast<int64_t>(tensors.size()));
  shape.insert(shape.end(), first.sizes().begin(), first.sizes().end());
  at::Tensor batch = at::empty(shape, first.options());
  const size_t bytes = first.nbytes();
  if (bytes == 0) return batch;
  auto* destination = static_cast<char*>(batch.data_ptr());
  for (const at::Tensor& tensor : tensors) {
    std::memcpy(destination, tensor.data_ptr(), bytes);
    destination += bytes;
  }
  return batch;
}

at::Tensor StackPaddedTensors(const std::vector<at::Tensor>& tensors, const std::vector<int64_t>& largest) {
  std::vector<int64_t> shape{static_cast<int64_t>(tensors.size())};
  shape.insert(shape.end(), largest.begin(), largest.end());
  at::Tensor batch = at::zeros(shape, tensors.front().options());
  bool rows_alike = !largest.empty();  // every tensor is plain and differs from `largest` in dim 0 alone
  for (const at::Tensor& tensor : tensors) {
    rows_alike = rows_alike && IsPlainContiguousCpu(tensor);
    for (size_t d = 1; rows_alike && d < largest.size(); ++d)
      rows_alike = tensor.size(static_cast<int64_t>(d)) == largest[d];
  }
  if (rows_alike) {
    const size_t row_bytes = batch.nbytes() / tensors.size();
    auto* destination = static_cast<char*>(batch.data_ptr());
    for (const at::Tensor& tensor : tensors) {
      if (tensor.nbytes() > 0) std::memcpy(destination, tensor.data_ptr(), tensor.nbytes());
      destination += row_bytes;
    }
    return batch;
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor row = batch.select(0, static_cast<int64_t>(i));
    for (int64_t d = 0; d < tensors[i].dim(); ++d) row = row.narrow(d, 0, tensors[i].size(d));
    row.copy_(tensors[i]);
  }
  return batch;
}

}  // namespace est::data
