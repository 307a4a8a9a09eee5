#pragma once
/// Tensors cut into the TensorChunks of the variable service's frames, and put back together
/// on the other side. Internal to the parameter servers.

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "distribute/parameter_server/tensor_frame.h"
#include "distribute/parameter_server/variable_service.pb.h"

namespace est::distribute {

/// Bytes of tensor data one stream message carries at most.
inline constexpr int64_t kChunkBytes = 4 << 20;
/// Largest message of the variable service: a chunk and its header, with room to spare.
inline constexpr int kMaxVariableMessageBytes = 2 * kChunkBytes + (1 << 20);

/// Which tensor of which shard: (shard id, slot), slot "" for the value.
using TensorKey = std::pair<uint32_t, std::string>;

/// One tensor to send.
struct TensorToSend {
  uint32_t shard = 0;
  std::string slot;
  at::Tensor tensor;  ///< on the CPU; made contiguous when it is not
};

/// The tensor received chunks of `key` land in, given the shape and dtype the first chunk
/// announced: a contiguous CPU tensor, or undefined for a new one. One of another shape or
/// dtype makes the chunk an error (the sender holds another plan).
using TensorDestination = std::function<at::Tensor(const TensorKey& key, at::IntArrayRef shape, at::ScalarType dtype)>;

/// Cuts tensors into the chunks of a stream of frames: the current frame (whose header's other
/// fields the caller may set) gets chunks until it holds kChunkBytes, then `write` sends it
/// (and may move from it) and a cleared one follows. The frames refer to the tensors' memory.
template <typename Header>
class ChunkWriter {
 public:
  explicit ChunkWriter(std::function<bool(TensorFrame<Header>&)> write) : write_(std::move(write)) {}
  /// The header of the frame being filled.
  Header& header() { return frame_.header; }
  /// Adds one tensor's chunks; false as soon as a write is.
  bool add(const TensorToSend& tensor);
  /// Writes the last frame, even without chunks; false when the write is.
  bool finish() { return write_(frame_); }

 private:
  std::function<bool(TensorFrame<Header>&)> write_;
  TensorFrame<Header> frame_;
  int64_t in_frame_ = 0;
};

/// Writes `tensors` in chunks after `header` (the first frame's other fields).
template <typename Header>
bool WriteChunked(const std::vector<TensorToSend>& tensors, const Header& header,
                  const std::function<bool(TensorFrame<Header>&)>& write) {
  ChunkWriter<Header> writer(write);
  writer.header() = header;
  for (const TensorToSend& tensor : tensors)
    if (!writer.add(tensor)) return false;
  return writer.finish();
}

/// Puts tensors back together from the chunks of received frames, checking every chunk
/// against what was announced: a chunk out of order, past the end, of an unknown dtype or
/// without its bytes is an error.
class TensorAssembler {
 public:
  /// The most one tensor may announce.
  static constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
  /// `destination`: where tensors land (default: new tensors).
  explicit TensorAssembler(TensorDestination destination = nullptr) : destination_(std::move(destination)) {}
  /// Adds the chunks of one frame, reading their bytes from `bytes`; "" when they fit, else
  /// what is wrong.
  template <typename Header>
  std::string add(TensorFrame<Header>& frame) {
    for (const ps::TensorChunk& chunk : frame.header.chunks())
      if (std::string error = add(chunk, frame.bytes); !error.empty()) return error;
    return check_frame_read(frame.bytes);
  }
  /// "" when every tensor begun is complete, else which is not.
  std::string check_complete() const;
  /// The tensors, by (shard, slot); the assembler is empty afterwards.
  std::map<TensorKey, at::Tensor> take();

 private:
  struct Partial {
    at::Tensor tensor;
    int64_t received = 0;
  };
  std::string add(const ps::TensorChunk& chunk, FrameBytes& bytes);
  static std::string check_frame_read(const FrameBytes& bytes);

  TensorDestination destination_;
  std::map<TensorKey, Partial> tensors_;
};

namespace detail {
/// Announces `bytes` bytes of `tensor` from `offset` in a new chunk of `frame`'s header and
/// appends them to its bytes.
template <typename Header>
void AddChunk(TensorFrame<Header>& frame, const TensorToSend& tensor, const at::Tensor& contiguous, int64_t offset,
              int64_t bytes) {
  ps::TensorChunk* chunk = frame.header.add_chunks();
  chunk->set_shard(tensor.shard);
  chunk->set_slot(tensor.slot);
  chunk->set_offset(static_cast<uint64_t>(offset));
  chunk->set_size(static_cast<uint64_t>(bytes));
  if (offset == 0) {
    for (int64_t size : contiguous.sizes()) chunk->add_shape(size);
    chunk->set_dtype(static_cast<int32_t>(contiguous.scalar_type()));
  }
  frame.bytes.append(contiguous, static_cast<const char*>(contiguous.data_ptr()) + offset, static_cast<size_t>(bytes));
}
}  // namespace detail

template <typename Header>
bool ChunkWriter<Header>::add(const TensorToSend& tensor) {
  const at::Tensor contiguous = tensor.tensor.contiguous();
  const int64_t total = static_cast<int64_t>(contiguous.nbytes());
  int64_t offset = 0;
  do {
    const int64_t bytes = std::min(total - offset, kChunkBytes - in_frame_);
    detail::AddChunk(frame_, tensor, contiguous, offset, bytes);
    offset += bytes;
    in_frame_ += bytes;
    if (in_frame_ >= kChunkBytes) {
      if (!write_(frame_)) return false;
      frame_.header.Clear();
      frame_.bytes.clear();
      in_frame_ = 0;
    }
  } while (offset < total);
  return true;
}

}  // namespace est::distribute
