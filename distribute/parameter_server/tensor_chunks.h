#pragma once
/// Tensors cut into TensorChunk messages for the variable service's streams, and put back
/// together on the other side. Internal to the parameter servers.

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

/// Cuts tensors into the chunks of a stream of messages: the current message (whose other
/// fields the caller may set) gets chunks until it holds kChunkBytes, then `write` sends it
/// (and may move from it) and a cleared one follows.
template <typename Message>
class ChunkWriter {
 public:
  explicit ChunkWriter(std::function<bool(Message&)> write) : write_(std::move(write)) {}
  /// The message being filled.
  Message& message() { return message_; }
  /// Adds one tensor's chunks, copying its bytes into the messages; false as soon as a write is.
  bool add(const TensorToSend& tensor);
  /// Writes the last message, even without chunks; false when the write is.
  bool finish() { return write_(message_); }

 private:
  std::function<bool(Message&)> write_;
  Message message_;
  int64_t in_message_ = 0;
};

/// Writes `tensors` in chunks after `header` (the first message's other fields).
template <typename Message>
bool WriteChunked(const std::vector<TensorToSend>& tensors, const Message& header,
                  const std::function<bool(Message&)>& write) {
  ChunkWriter<Message> writer(write);
  writer.message() = header;
  for (const TensorToSend& tensor : tensors)
    if (!writer.add(tensor)) return false;
  return writer.finish();
}

/// Puts tensors back together from their chunks, checking every chunk against what was
/// announced: a chunk out of order, past the end or of an unknown dtype is an error.
class TensorAssembler {
 public:
  /// `max_bytes`: the most one tensor may hold.
  explicit TensorAssembler(int64_t max_bytes = int64_t{1} << 40) : max_bytes_(max_bytes) {}
  /// Adds one chunk; "" when it fits, else what is wrong with it.
  std::string add(const ps::TensorChunk& chunk);
  /// "" when every tensor begun is complete, else which is not.
  std::string check_complete() const;
  /// The tensors, by (shard, slot); the assembler is empty afterwards.
  std::map<TensorKey, at::Tensor> take();

 private:
  struct Partial {
    at::Tensor tensor;
    int64_t received = 0;
  };
  int64_t max_bytes_;
  std::map<TensorKey, Partial> tensors_;
};

namespace detail {
/// Copies `bytes` bytes of `tensor` from `offset` into a new chunk of `chunks`.
void AddChunk(google::protobuf::RepeatedPtrField<ps::TensorChunk>& chunks, const TensorToSend& tensor,
              const at::Tensor& contiguous, int64_t offset, int64_t bytes);
}  // namespace detail

template <typename Message>
bool ChunkWriter<Message>::add(const TensorToSend& tensor) {
  const at::Tensor contiguous = tensor.tensor.contiguous();
  const int64_t total = static_cast<int64_t>(contiguous.nbytes());
  int64_t offset = 0;
  do {
    const int64_t bytes = std::min(total - offset, kChunkBytes - in_message_);
    detail::AddChunk(*message_.mutable_chunks(), tensor, contiguous, offset, bytes);
    offset += bytes;
    in_message_ += bytes;
    if (in_message_ >= kChunkBytes) {
      if (!write_(message_)) return false;
      message_.Clear();
      in_message_ = 0;
    }
  } while (offset < total);
  return true;
}

}  // namespace est::distribute
