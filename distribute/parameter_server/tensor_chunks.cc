#include "distribute/parameter_server/tensor_chunks.h"

#include <ATen/ATen.h>

#include <cstring>

namespace est::distribute {
namespace {

std::string Describe(const TensorKey& key) {
  return "shard " + std::to_string(key.first) + (key.second.empty() ? "" : " slot '" + key.second + "'");
}

}  // namespace

namespace detail {

void AddChunk(google::protobuf::RepeatedPtrField<ps::TensorChunk>& chunks, const TensorToSend& tensor,
              const at::Tensor& contiguous, int64_t offset, int64_t bytes) {
  ps::TensorChunk* chunk = chunks.Add();
  chunk->set_shard(tensor.shard);
  chunk->set_slot(tensor.slot);
  chunk->set_offset(static_cast<uint64_t>(offset));
  if (offset == 0) {
    for (int64_t size : contiguous.sizes()) chunk->add_shape(size);
    chunk->set_dtype(static_cast<int32_t>(contiguous.scalar_type()));
  }
  chunk->mutable_data()->assign(static_cast<const char*>(contiguous.data_ptr()) + offset, static_cast<size_t>(bytes));
}

}  // namespace detail

std::string TensorAssembler::add(const ps::TensorChunk& chunk) {
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
      if (size < 0 || (size > 0 && bytes > max_bytes_ / size))
        return Describe(key) + " announces a shape beyond " + std::to_string(max_bytes_) + " bytes";
      bytes *= size;
    }
    it = tensors_.emplace(key, Partial{at::empty(shape, at::TensorOptions().dtype(dtype)), 0}).first;
  } else if (it == tensors_.end()) {
    return Describe(key) + " began at byte " + std::to_string(chunk.offset()) + " instead of 0";
  }
  Partial& partial = it->second;
  const int64_t total = static_cast<int64_t>(partial.tensor.nbytes());
  if (static_cast<int64_t>(chunk.offset()) != partial.received)
    return Describe(key) + ": a chunk at byte " + std::to_string(chunk.offset()) + " where byte " +
           std::to_string(partial.received) + " was due";
  if (static_cast<int64_t>(chunk.data().size()) > total - partial.received)
    return Describe(key) + ": chunks past its " + std::to_string(total) + " bytes";
  std::memcpy(static_cast<char*>(partial.tensor.data_ptr()) + partial.received, chunk.data().data(),
              chunk.data().size());
  partial.received += static_cast<int64_t>(chunk.data().size());
  return "";
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
