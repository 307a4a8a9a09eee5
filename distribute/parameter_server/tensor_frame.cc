#include "distribute/parameter_server/tensor_frame.h"

#include <google/protobuf/message_lite.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace est::distribute {
namespace {

constexpr size_t kSizeBytes = 4;

void ReleaseStorage(void* storage) { delete static_cast<c10::Storage*>(storage); }

}  // namespace

void FrameBytes::append(const at::Tensor& owner, const void* data, size_t size) {
  if (size == 0) return;
  // The slice holds a reference to the storage, dropped when gRPC is done with the bytes.
  slices_.emplace_back(const_cast<void*>(data), size, &ReleaseStorage, new c10::Storage(owner.storage()));
  size_ += size;
}

bool FrameBytes::read(void* destination, size_t size) {
  if (size > remaining()) return false;
  auto* out = static_cast<char*>(destination);
  while (size > 0) {
    const grpc::Slice& slice = slices_[slice_];
    const size_t bytes = std::min(size, slice.size() - in_slice_);
    std::memcpy(out, slice.begin() + in_slice_, bytes);
    out += bytes;
    size -= bytes;
    read_ += bytes;
    in_slice_ += bytes;
    if (in_slice_ == slice.size()) {
      ++slice_;
      in_slice_ = 0;
    }
  }
  return true;
}

void FrameBytes::clear() { assign({}); }

void FrameBytes::assign(std::vector<grpc::Slice> slices) {
  slices_ = std::move(slices);
  slices_.erase(std::remove_if(slices_.begin(), slices_.end(), [](const grpc::Slice& s) { return s.size() == 0; }),
                slices_.end());
  size_ = 0;
  for (const grpc::Slice& slice : slices_) size_ += slice.size();
  read_ = slice_ = in_slice_ = 0;
}

namespace detail {

grpc::Status SerializeFrame(const google::protobuf::MessageLite& header, const FrameBytes& bytes,
                            grpc::ByteBuffer* buffer) {
  const size_t header_size = header.ByteSizeLong();
  if (header_size > 0xffffffffu)
    return grpc::Status(grpc::StatusCode::INTERNAL, "a frame header of " + std::to_string(header_size) + " bytes");
  grpc::Slice first(kSizeBytes + header_size);
  auto* out = const_cast<uint8_t*>(first.begin());
  for (size_t i = 0; i < kSizeBytes; ++i) out[i] = static_cast<uint8_t>(header_size >> (8 * i));
  if (!header.SerializeToArray(out + kSizeBytes, static_cast<int>(header_size)))
    return grpc::Status(grpc::StatusCode::INTERNAL, "could not serialize a frame header");
  std::vector<grpc::Slice> slices;
  slices.reserve(1 + bytes.slices().size());
  slices.push_back(std::move(first));
  slices.insert(slices.end(), bytes.slices().begin(), bytes.slices().end());
  *buffer = grpc::ByteBuffer(slices.data(), slices.size());
  return grpc::Status::OK;
}

grpc::Status DeserializeFrame(grpc::ByteBuffer* buffer, google::protobuf::MessageLite& header, FrameBytes& bytes) {
  std::vector<grpc::Slice> slices;
  if (grpc::Status dumped = buffer->Dump(&slices); !dumped.ok()) return dumped;
  buffer->Clear();
  bytes.assign(std::move(slices));
  uint8_t size_bytes[kSizeBytes];
  if (!bytes.read(size_bytes, kSizeBytes))
    return grpc::Status(grpc::StatusCode::INTERNAL, "a frame of " + std::to_string(bytes.remaining()) + " bytes");
  size_t header_size = 0;
  for (size_t i = 0; i < kSizeBytes; ++i) header_size |= static_cast<size_t>(size_bytes[i]) << (8 * i);
  std::string serialized(header_size, '\0');
  if (!bytes.read(serialized.data(), header_size) || !header.ParseFromString(serialized))
    return grpc::Status(grpc::StatusCode::INTERNAL, "a frame whose header of " + std::to_string(header_size) +
                                                        " bytes does not parse");
  return grpc::Status::OK;
}

}  // namespace detail
}  // namespace est::distribute
