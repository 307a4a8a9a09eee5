#include "distribute/parameter_server/tensor_pool.h"

#include <ATen/ATen.h>

namespace est::distribute {

at::Tensor TensorPool::take(const Key& key, at::IntArrayRef shape, at::ScalarType dtype) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<at::Tensor>& kept = buffers_[key];
  for (at::Tensor& buffer : kept) {
    // Only this pool holds it (no tensor, view or gRPC slice), so nobody can while we do.
    const bool free = buffer.use_count() == 1 && buffer.storage().use_count() == 1;
    if (free && buffer.sizes() == shape && buffer.scalar_type() == dtype) return buffer;
  }
  at::Tensor buffer = at::empty(shape, at::TensorOptions().dtype(dtype));
  if (kept.size() < kBuffersPerKey) {
    kept.push_back(buffer);
  } else {
    // Replace a free buffer of another shape, if any: the variables changed.
    for (at::Tensor& old : kept)
      if (old.use_count() == 1 && old.storage().use_count() == 1) {
        old = buffer;
        break;
      }
  }
  return buffer;
}

}  // namespace est::distribute
