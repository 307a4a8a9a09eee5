#pragma once
/// TensorFrame: one message of the variable service's streams. A protobuf header announces
/// tensor chunks (TensorChunk: which tensor, where, how many bytes) and the chunks' bytes
/// travel beside the header instead of inside it: a sender's frame refers to its tensors'
/// memory and a receiver's keeps gRPC's buffers, so the bytes are copied once on the way, into
/// where they belong, instead of into and out of protobuf strings. Internal to the parameter
/// servers.
///
/// On the wire a frame is the header's size (4 bytes, little-endian), the header, then the
/// chunks' bytes in the order of the header's chunks.

#include <ATen/core/Tensor.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <grpcpp/support/status.h>

#include <cstddef>
#include <vector>

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace est::distribute {

/// The bytes beside a frame's header: slices of tensors to send, or of a received message to
/// read in order.
class FrameBytes {
 public:
  /// Sending: appends `size` bytes at `data`, which `owner`'s storage holds; gRPC keeps a
  /// reference to that storage (not to `owner`, which may be given other storage) until it has
  /// sent them, so nobody may change them meanwhile.
  void append(const at::Tensor& owner, const void* data, size_t size);
  /// Receiving: copies the next `size` bytes to `destination`; false, copying nothing, when
  /// fewer remain.
  bool read(void* destination, size_t size);
  /// Bytes not read yet.
  size_t remaining() const { return size_ - read_; }
  /// Forgets every byte.
  void clear();

  /// The slices, for (de)serialization.
  const std::vector<grpc::Slice>& slices() const { return slices_; }
  /// Takes the slices of a received message; reading starts at its first byte.
  void assign(std::vector<grpc::Slice> slices);

 private:
  std::vector<grpc::Slice> slices_;
  size_t size_ = 0;
  size_t read_ = 0;
  size_t slice_ = 0;     ///< the slice the next read starts in
  size_t in_slice_ = 0;  ///< and where in it
};

/// A header and the bytes of its chunks.
template <typename Header>
struct TensorFrame {
  Header header;
  FrameBytes bytes;
};

namespace detail {
/// `header` and `bytes` as one ByteBuffer (the bytes not copied).
grpc::Status SerializeFrame(const google::protobuf::MessageLite& header, const FrameBytes& bytes,
                            grpc::ByteBuffer* buffer);
/// Parses the header of `buffer` into `header` and leaves the rest in `bytes`.
grpc::Status DeserializeFrame(grpc::ByteBuffer* buffer, google::protobuf::MessageLite& header, FrameBytes& bytes);
}  // namespace detail

}  // namespace est::distribute
