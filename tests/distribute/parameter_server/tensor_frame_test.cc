// Tensor frames of the variable service: chunks written by ChunkWriter travel through gRPC's
// byte buffers with their bytes referred to rather than copied, land in the tensors a
// destination gives, and every malformed frame is an error that says what is wrong; the
// buffer pool hands out only buffers nobody holds.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "distribute/parameter_server/tensor_chunks.h"
#include "distribute/parameter_server/tensor_pool.h"

using namespace est::distribute;
namespace ps = est::ps;

namespace {

/// What a receiver gets for `frame`: serialized as the variable service sends it, then
/// deserialized.
TensorFrame<ps::PushRequest> Received(const TensorFrame<ps::PushRequest>& frame) {
  grpc::ByteBuffer buffer;
  REQUIRE(est::distribute::detail::SerializeFrame(frame.header, frame.bytes, &buffer).ok());
  TensorFrame<ps::PushRequest> received;
  REQUIRE(est::distribute::detail::DeserializeFrame(&buffer, received.header, received.bytes).ok());
  return received;
}

/// The frames ChunkWriter cuts `tensors` into, with worker 3 in the first header.
std::vector<TensorFrame<ps::PushRequest>> Frames(const std::vector<TensorToSend>& tensors) {
  std::vector<TensorFrame<ps::PushRequest>> frames;
  ps::PushRequest header;
  header.set_worker(3);
  REQUIRE(WriteChunked<ps::PushRequest>(tensors, header, [&](TensorFrame<ps::PushRequest>& frame) {
    frames.push_back(Received(frame));
    return true;
  }));
  return frames;
}

}  // namespace

TEST_CASE("tensor frames carry their tensors exactly, in chunks, without copying the sender's bytes",
          "[distribute][ps]") {
  const at::Tensor big = torch::arange(3 * kChunkBytes / 4 + 5, torch::kFloat32).reshape({-1, 1});  // 3 chunks
  const at::Tensor small = torch::tensor({1, 2, 3}, torch::kInt64);
  const auto frames = Frames({{0, "grad", big}, {7, "grad", small}});
  REQUIRE(frames.size() == 4);  // three full frames and the last, which holds big's tail and small
  CHECK(frames.front().header.worker() == 3);
  CHECK(frames.back().header.chunks_size() == 2);

  at::Tensor landed = torch::zeros_like(big);
  TensorAssembler assembler([&](const TensorKey& key, at::IntArrayRef, at::ScalarType) {
    return key.first == 0 ? landed : at::Tensor();
  });
  for (auto frame : frames) REQUIRE(assembler.add(frame).empty());
  REQUIRE(assembler.check_complete().empty());
  auto tensors = assembler.take();
  CHECK(tensors.at({0, "grad"}).data_ptr() == landed.data_ptr());  // into the destination
  CHECK(torch::equal(landed, big));
  CHECK(torch::equal(tensors.at({7, "grad"}), small));

  // The sender's frame refers to the tensor's memory: its serialized bytes are that memory.
  TensorFrame<ps::PushRequest> frame;
  est::distribute::detail::AddChunk(frame, {0, "grad", small}, small, 0, static_cast<int64_t>(small.nbytes()));
  grpc::ByteBuffer buffer;
  REQUIRE(est::distribute::detail::SerializeFrame(frame.header, frame.bytes, &buffer).ok());
  std::vector<grpc::Slice> slices;
  REQUIRE(buffer.Dump(&slices).ok());
  REQUIRE(slices.size() == 2);
  CHECK(static_cast<const void*>(slices[1].begin()) == small.data_ptr());
}

TEST_CASE("a malformed tensor frame is an error naming what is wrong", "[distribute][ps]") {
  const at::Tensor value = torch::arange(6, torch::kFloat32).reshape({2, 3});
  TensorFrame<ps::PushRequest> frame;
  est::distribute::detail::AddChunk(frame, {2, "grad", value}, value, 0, static_cast<int64_t>(value.nbytes()));

  SECTION("bytes beyond its chunks") {
    frame.bytes.append(value, value.data_ptr(), 4);
    TensorFrame<ps::PushRequest> received = Received(frame);
    CHECK_THAT(TensorAssembler().add(received), Catch::Contains("4 bytes beyond its chunks"));
  }
  SECTION("a chunk announcing more bytes than the frame carries") {
    frame.header.mutable_chunks(0)->set_size(value.nbytes() + 8);
    TensorFrame<ps::PushRequest> received = Received(frame);
    CHECK_THAT(TensorAssembler().add(received), Catch::Contains("chunks past its 24 bytes"));
  }
  SECTION("fewer bytes than its chunk announces") {
    frame.header.mutable_chunks(0)->set_size(16);
    frame.header.mutable_chunks(0)->clear_shape();
    frame.header.mutable_chunks(0)->add_shape(8);
    TensorFrame<ps::PushRequest> short_frame;
    short_frame.header = frame.header;
    short_frame.bytes.append(value, value.data_ptr(), 8);
    TensorFrame<ps::PushRequest> received = Received(short_frame);
    CHECK_THAT(TensorAssembler().add(received), Catch::Contains("a chunk of 16 bytes in a frame with 8 left"));
  }
  SECTION("a destination of another shape") {
    TensorFrame<ps::PushRequest> received = Received(frame);
    TensorAssembler assembler([](const TensorKey&, at::IntArrayRef, at::ScalarType) {
      return torch::zeros({3, 2});
    });
    CHECK_THAT(assembler.add(received), Catch::Contains("came as Float [2, 3] where Float [3, 2] was expected"));
  }
  SECTION("a buffer too short for its header") {
    const uint8_t bytes[] = {200, 0, 0, 0, 1, 2};
    grpc::Slice slice(bytes, sizeof bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    TensorFrame<ps::PushRequest> received;
    const grpc::Status status = est::distribute::detail::DeserializeFrame(&buffer, received.header, received.bytes);
    CHECK_FALSE(status.ok());
    CHECK_THAT(status.error_message(), Catch::Contains("header of 200 bytes does not parse"));
  }
}

TEST_CASE("the tensor pool hands out a buffer again only once nobody holds it", "[distribute][ps]") {
  TensorPool pool;
  const TensorPool::Key key{1, 2, ""};
  at::Tensor first = pool.take(key, {4, 4}, at::kFloat);
  at::Tensor second = pool.take(key, {4, 4}, at::kFloat);
  CHECK(first.data_ptr() != second.data_ptr());  // first is held
  void* const first_memory = first.data_ptr();
  at::Tensor view = first.narrow(0, 1, 2);
  first.reset();
  CHECK(pool.take(key, {4, 4}, at::kFloat).data_ptr() != first_memory);  // a view still holds it
  view.reset();
  second.reset();
  at::Tensor again = pool.take(key, {4, 4}, at::kFloat);
  CHECK(again.data_ptr() == first_memory);
  CHECK(pool.take({1, 3, ""}, {4, 4}, at::kFloat).data_ptr() != first_memory);  // another key
  CHECK(pool.take(key, {2, 8}, at::kFloat).sizes() == at::IntArrayRef({2, 8}));  // another shape: a new one
}
