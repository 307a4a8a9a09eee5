#include "checkpoint/checkpoint_writer.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_reader.h"
#include "common/crc32c.h"
#include "common/error.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using namespace est::checkpoint::testing;
using est::CheckpointError;
using est::testing::FreshTempDir;
namespace fs = std::filesystem;

TEST_CASE("WriteCheckpoint writes an index and one data file", "[checkpoint]") {
  auto dir = FreshTempDir("writer_files");
  const std::string prefix = (dir / "model.ckpt-5").string();
  WriteCheckpoint(prefix, {{"w", at::ones({2, 3})}}, {{"position", "17"}}, 5);
  CHECK(ListDirectory(dir) ==
        std::vector<std::string>{"model.ckpt-5.data-00000-of-00001", "model.ckpt-5.index"});
}

TEST_CASE("the bundle index records dtype, shape, aligned offsets, sizes and masked CRC32C",
          "[checkpoint]") {
  auto dir = FreshTempDir("writer_index");
  const std::string prefix = (dir / "model.ckpt-3").string();
  const at::Tensor a = at::arange(5, at::kInt);  // 20 bytes: the next entry needs padding
  const at::Tensor b = at::full({2, 2}, 1.5, at::kDouble);
  WriteCheckpoint(prefix, {{"b", b}, {"a", a}}, {{"blob", "xyz"}}, 3);

  const TensorBundleIndex index = ReadBundleIndex(prefix);
  const std::string data = est::ReadFile(DataPath(prefix));
  CHECK(index.header.num_shards() == 1);
  CHECK(index.header.endianness() == proto::BundleHeaderProto::LITTLE);
  CHECK(index.header.version().producer() == 1);
  std::vector<std::string> keys;
  for (const auto& [key, entry] : index.entries) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"_est_blobs/blob", "a", "b", "global_step"});
  const auto& entry_blob = index.entries[0].second;
  const auto& entry_a = index.entries[1].second;
  const auto& entry_b = index.entries[2].second;
  const auto& entry_step = index.entries[3].second;
  // In write order in the data file: b, a, global_step, then the blob.
  CHECK(entry_b.dtype() == proto::DT_DOUBLE);
  REQUIRE(entry_b.shape().dim_size() == 2);
  CHECK(entry_b.shape().dim(0).size() == 2);
  CHECK(entry_b.offset() == 0);
  CHECK(entry_b.size() == 32);
  CHECK(entry_b.crc32c() == est::crc32c::Mask(est::crc32c::Value(b.data_ptr(), 32)));
  CHECK(data.substr(0, 32) == std::string(static_cast<const char*>(b.data_ptr()), 32));
  CHECK(entry_a.dtype() == proto::DT_INT32);
  CHECK(entry_a.shard_id() == 0);
  CHECK(entry_a.offset() == 64);
  CHECK(entry_a.size() == 20);
  CHECK(entry_a.crc32c() == est::crc32c::Mask(est::crc32c::Value(a.data_ptr(), 20)));
  CHECK(entry_step.dtype() == proto::DT_INT64);
  CHECK(entry_step.shape().dim_size() == 0);
  CHECK(entry_step.offset() == 128);
  CHECK(data.substr(128, 8) == std::string("\x03\0\0\0\0\0\0\0", 8));
  CHECK(entry_blob.dtype() == proto::DT_STRING);
  CHECK(entry_blob.shape().dim_size() == 0);
  CHECK(entry_blob.offset() == 192);
  // TensorFlow's string layout: varint length 3, the masked CRC32C of the length as uint32, "xyz".
  const uint32_t length = 3;
  const uint32_t lengths_crc = est::crc32c::Mask(est::crc32c::Value(&length, 4));
  CHECK(data.substr(192) == std::string("\x03", 1) +
                                std::string(reinterpret_cast<const char*>(&lengths_crc), 4) + "xyz");
  CHECK(entry_blob.size() == 8);
  CHECK(data.size() == 200);
}

TEST_CASE("the step is the tensor global_step, or must agree with the one given",
          "[checkpoint]") {
  auto dir = FreshTempDir("writer_global_step");
  const std::string prefix = (dir / "model.ckpt-7").string();
  WriteCheckpoint(prefix, {{"global_step", at::scalar_tensor(7, at::kLong)}}, {}, 7);
  CHECK(ReadBundleIndex(prefix).entries.size() == 1);
  CHECK(CheckpointReader(prefix).global_step() == 7);
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"global_step", at::scalar_tensor(6, at::kLong)}}, {}, 7),
                    Catch::Contains("'global_step'") && Catch::Contains(prefix));
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"global_step", at::full({1}, 7, at::kLong)}}, {}, 7),
                    Catch::Contains("scalar"));
  CHECK(CheckpointReader(prefix).global_step() == 7);
}

TEST_CASE("WriteCheckpoint rejects names that would collide with its own keys", "[checkpoint]") {
  auto dir = FreshTempDir("writer_reserved");
  const std::string prefix = (dir / "model.ckpt-1").string();
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"_est_blobs/x", at::ones({1})}}, {}, 1),
                    Catch::Contains("'_est_blobs/x'") && Catch::Contains("reserved"));
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"", at::ones({1})}}, {}, 1),
                    Catch::Contains("empty name"));
  CHECK(ListDirectory(dir).empty());
}

TEST_CASE("WriteCheckpoint rejects repeated tensor names and writes nothing", "[checkpoint]") {
  auto dir = FreshTempDir("writer_duplicate");
  const std::string prefix = (dir / "model.ckpt-1").string();
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"w", at::ones({1})}, {"w", at::zeros({1})}}, {}, 1),
                    Catch::Contains("'w'") && Catch::Contains(prefix));
  CHECK(ListDirectory(dir).empty());
}

TEST_CASE("WriteCheckpoint rejects tensors it cannot store, naming them", "[checkpoint]") {
  auto dir = FreshTempDir("writer_unsupported");
  const std::string prefix = (dir / "model.ckpt-1").string();
  CHECK_THROWS_WITH(
      WriteCheckpoint(prefix, {{"ok", at::ones({1})}, {"sparse", at::eye(3).to_sparse()}}, {}, 1),
      Catch::Contains("'sparse'"));
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"undefined", at::Tensor()}}, {}, 1),
                    Catch::Contains("'undefined'"));
  const at::Tensor quantized = at::quantize_per_tensor(at::ones({2}), 0.1, 0, at::kQInt8);
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"quantized", quantized}}, {}, 1),
                    Catch::Contains("'quantized'"));
  CHECK(ListDirectory(dir).empty());
}

TEST_CASE("WriteCheckpoint into a directory that cannot exist names the path", "[checkpoint]") {
  auto dir = FreshTempDir("writer_uncreatable");
  est::WriteFileAtomic((dir / "file").string(), "a regular file");
  const std::string prefix = (dir / "file" / "sub" / "model.ckpt-1").string();
  CHECK_THROWS_AS(WriteCheckpoint(prefix, {{"w", at::ones({1})}}, {}, 1), CheckpointError);
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"w", at::ones({1})}}, {}, 1),
                    Catch::Contains(prefix));
}

TEST_CASE("a failed index write removes the new data file and leaves no temporaries",
          "[checkpoint]") {
  auto dir = FreshTempDir("writer_index_fails");
  const std::string prefix = (dir / "model.ckpt-2").string();
  fs::create_directories(IndexPath(prefix) + "/blocker");  // renaming the index onto it fails
  CHECK_THROWS_WITH(WriteCheckpoint(prefix, {{"w", at::ones({4})}}, {}, 2),
                    Catch::Contains(prefix));
  CHECK(ListDirectory(dir) == std::vector<std::string>{"model.ckpt-2.index"});
}

TEST_CASE("writing a prefix again replaces the checkpoint", "[checkpoint]") {
  auto dir = FreshTempDir("writer_replace");
  const std::string prefix = (dir / "model.ckpt-4").string();
  WriteCheckpoint(prefix, {{"w", at::zeros({3})}}, {}, 4);
  WriteCheckpoint(prefix, {{"v", at::ones({2})}}, {}, 4);
  CHECK(CheckpointReader(prefix).tensor_names() == std::vector<std::string>{"global_step", "v"});
  CHECK(ListDirectory(dir).size() == 2);
}
