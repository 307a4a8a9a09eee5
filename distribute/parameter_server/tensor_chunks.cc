#include "distribute/parameter_server/tensor_chunks.h"

#include <ATen/ATen.h>

#include "common/error.h"

namespace est::distribute {
namespace {

std::string Describe(const TensorKey& key) {
  return "shard " + std::to_string(key.first) + (key.second.empty() ? "" : " slot '" + key.second + "'");
}

}  // namespace

std::string TensorAssembler::add(const ps::TensorChunk& chunk, FrameBytes& bytes) {
  const TensorKey key{chunk.shard(), chunk.slot()};
  auto it = tensors_.find(key);
  if (chunk.offset() == 0) {
    if (it != tensors_.end()) return Describe(key) + " was sent twice";
    const auto dtype = static_cast<at::ScalarType>(chunk.dtype());
    if (chunk.dtype() < 0 || chunk.dtype() >= static_cast<int32_t>(at::ScalarType::NumOptions) ||
        !(at::isFloatingType(dtype) || at::isIntegralType(dtype, /*includeBool=*/true)))
      return Describe(key) + " has dtype code " + std::to_string(chunk.dtype()) + ", not a real number type";
    std::vector<int64_t> shape(chunk.shape().begin(), chunk.shape().end());
    int64_t bytes = static_cast<int64_t>(c10::elementSize(dtype));
    for (int64_t size : shape) {
      if (size < 0 || (size > 0 && bytes > kMaxTensorBytes / size))
        return Describe(key) + " announces a shape beyond " + std::to_string(kMaxTensorBytes) + " bytes";
      bytes *= size;
    }
    at::Tensor tensor = destination_ ? destination_(key, shape, dtype) : at::Tensor();
    if (!tensor.defined()) tensor = at::empty(shape, at::TensorOptions().dtype(dtype));
    if (tensor.sizes() != at::IntArrayRef(shape) || tensor.scalar_type() != dtype)
      return Describe(key) + " came as " + c10::toString(dtype) + " " + c10::str(at::IntArrayRef(shape)) +
             " where " + c10::toString(tensor.scalar_type()) + " " + c10::str(tensor.sizes()) + " was expected";
    EST_ASSERT(tensor.is_cpu() && tensor.is_contiguous(), "received chunks land in a contiguous CPU tensor");
    it = tensors_.emplace(key, Partial{std::move(tensor), 0}).first;
  } else if (it == tensors_.end()) {
    return Describe(key) + " began at byte " + std::to_string(chunk.offset()) + " instead of 0";
  }
  Partial& partial = it->second;
  const int64_t total = static_cast<int64_t>(partial.tensor.nbytes());
  if (static_cast<int64_t>(chunk.offset()) != partial.received)
    return Describe(key) + ": a chunk at byte " + std::to_string(chunk.offset()) + " where byte " +
           std::to_string(partial.received) + " was due";
  if (chunk.size() > static_cast<uint64_t>(total - partial.received))
    return Describe(key) + ": chunks past its " + std::to_string(total) + " bytes";
  if (!bytes.read(static_cast<char*>(partial.tensor.data_ptr()) + partial.received, chunk.size()))
    return Describe(key) + ": a chunk of " + std::to_string(chunk.size()) + " bytes in a frame with " +
           std::to_string(bytes.remaining()) + " left";
  partial.received += static_cast<int64_t>(chunk.size());
  return "";
}

std::string TensorAssembler::check_frame_read(const FrameBytes& bytes) {
  if (bytes.remaining() == 0) return "";
  return "a frame carries " + std::to_string(bytes.remaining()) + " bytes beyond its chunks";
}

std::string TensorAssembler::check_complete() const {
  for (const auto& [key, partial] : tensors_) {
    const int64_t total = static_cast<int64_t>(partial.tensor.nbytes());
    if (partial.received != total)
      return Describe(key) + " ended after " + std::to_string(partial.received) + " of its " + std::to_string(total) +
             " bytes";
  }
  return "";
}

std::map<TensorKey, at::Tensor> TensorAssembler::take() {
  std::map<TensorKey, at::Tensor> tensors;
  for (auto& [key, partial] : tensors_) tensors.emplace(key, std::move(partial.tensor));
  tensors_.clear();
  return tensors;
}

}  // namespace est::distribute
