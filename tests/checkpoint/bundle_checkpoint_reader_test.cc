// Tensor bundles through CheckpointReader: the checkpoint TensorFlow 2.15 wrote
// (tensorflow_checkpoint/, by make_tensorflow_checkpoint.py, whose formulas the tests
// recompute), partitioned variables, damage anywhere in an index.
#include "checkpoint/bundle_checkpoint_reader.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/string_tensor.h"
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

namespace {

const std::string kTensorFlowPrefix = std::string(EST_TENSORFLOW_CHECKPOINT_DIR) + "/model.ckpt";

/// The values make_tensorflow_checkpoint.py saved, by name.
std::vector<std::pair<std::string, at::Tensor>> TensorFlowValues() {
  const auto f32 = at::kFloat;
  return {
      {"float32", at::arange(12, f32).reshape({3, 4}) * 0.25 - 1},
      {"float64", at::arange(10, at::kDouble).reshape({2, 5}) / 3.0},
      {"int32", at::arange(-6, 6, at::kInt).reshape({3, 4})},
      {"int64", at::arange(10, at::kLong) + (int64_t{1} << 40)},
      {"bool", at::arange(9).remainder(3).eq(0).reshape({3, 3})},
      {"half", (at::arange(7, f32) * 0.5 - 1.5).to(at::kHalf)},
      {"bfloat16", (at::arange(6, f32).reshape({2, 3}) * 0.25).to(at::kBFloat16)},
      {"uint8", at::arange(256, at::kLong).to(at::kByte)},
      {"int8", at::arange(-128, 128, at::kLong).to(at::kChar)},
      {"int16", at::arange(-300, 300, 7, at::kLong).to(at::kShort)},
      {"complex64", at::complex(at::arange(4, f32), at::arange(4, f32) * -0.5)},
      {"scalar", at::scalar_tensor(2.5, at::kDouble)},
      {"empty", at::zeros({0, 3}, f32)},
      {"global_step", at::scalar_tensor(4242, at::kLong)},
      {"big", at::arange(20000, f32) * 0.5},
      {"dense/kernel", at::tensor({1.0f, -2.0f, 3.5f, -4.25f}).reshape({2, 2})},
  };
}

/// A copy of TensorFlow's checkpoint in `dir`, to damage.
std::string CopyTensorFlowCheckpoint(const fs::path& dir) {
  for (const auto& file : fs::directory_iterator(EST_TENSORFLOW_CHECKPOINT_DIR))
    fs::copy_file(file.path(), dir / file.path().filename());
  return (dir / "model.ckpt").string();
}

}  // namespace

TEST_CASE("a checkpoint TensorFlow wrote in two shards reads exactly", "[checkpoint]") {
  CheckpointReader reader(kTensorFlowPrefix);
  CHECK(reader.global_step() == 4242);
  std::vector<std::string> names;
  for (const auto& [name, expected] : TensorFlowValues()) {
    INFO(name);
    names.push_back(name);
    REQUIRE(reader.has_tensor(name));
    CHECK(reader.dtype(name) == expected.scalar_type());
    CHECK(reader.shape(name) == expected.sizes().vec());
    const at::Tensor read = reader.tensor(name);
    CHECK(read.sizes() == expected.sizes());
    CHECK(at::equal(read, expected));
  }
  CHECK(reader.string_tensor("strings") ==
        std::vector<std::string>{"", "tensor bundle", std::string("\0\xff bytes", 8)});
  CHECK(reader.string_tensor("string_scalar") == std::vector<std::string>{"hello"});
  CHECK(reader.shape("strings") == std::vector<int64_t>{3});
  CHECK(reader.shape("uint16") == std::vector<int64_t>{5});
  names.insert(names.end(), {"string_scalar", "strings", "uint16"});
  std::sort(names.begin(), names.end());
  CHECK(reader.tensor_names() == names);
  CHECK(reader.blob_names().empty());
  reader.verify();
}

TEST_CASE("tensors of types LibTorch lacks are named when read", "[checkpoint]") {
  CheckpointReader reader(kTensorFlowPrefix);
  CHECK_THROWS_WITH(reader.tensor("uint16"), Catch::Contains("'uint16'") && Catch::Contains("DataType 17"));
  CHECK_THROWS_WITH(reader.dtype("uint16"), Catch::Contains("'uint16'"));
  CHECK_THROWS_WITH(reader.tensor("strings"), Catch::Contains("'strings'") && Catch::Contains("string_tensor()"));
  CHECK_THROWS_WITH(reader.string_tensor("float32"), Catch::Contains("'float32'") && Catch::Contains("tensor()"));
  CHECK_THROWS_WITH(reader.string_tensor("absent"), Catch::Contains("'absent'"));
}

TEST_CASE("a missing shard of TensorFlow's checkpoint fails at open, naming it", "[checkpoint]") {
  auto dir = FreshTempDir("bundle_missing_shard");
  const std::string prefix = CopyTensorFlowCheckpoint(dir);
  fs::remove(DataPath(prefix, 1, 2));
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains(DataPath(prefix, 1, 2)));
}

TEST_CASE("a damaged string tensor of TensorFlow's fails its check, naming it", "[checkpoint]") {
  auto dir = FreshTempDir("bundle_damaged_strings");
  const std::string prefix = CopyTensorFlowCheckpoint(dir);
  TensorBundleIndex index = ReadBundleIndex(prefix);
  const proto::BundleEntryProto strings = FindEntry(index, "strings");
  FlipByte(DataPath(prefix, strings.shard_id(), 2), static_cast<uint64_t>(strings.offset() + strings.size() - 1));
  CheckpointReader reader(prefix);
  CHECK(reader.string_tensor("string_scalar") == std::vector<std::string>{"hello"});
  CHECK_THROWS_WITH(reader.string_tensor("strings"), Catch::Contains("tensor 'strings'") &&
                                                          Catch::Contains(DataPath(prefix, 0, 2)) &&
                                                          Catch::Contains("CRC32C"));
  CHECK_THROWS_WITH(reader.verify(), Catch::Contains("tensor 'strings'"));
}

TEST_CASE("a partitioned variable is listed but refused when read, naming it", "[checkpoint]") {
  auto dir = FreshTempDir("bundle_partitioned");
  const std::string prefix = CheckpointPrefix(dir.string(), 1);
  WriteCheckpoint(prefix, {{"w", at::ones({2})}}, {}, 1);
  TensorBundleIndex index = ReadBundleIndex(prefix);
  const proto::BundleEntryProto stored = FindEntry(index, "w");
  proto::BundleEntryProto whole = stored;
  whole.set_size(0);
  whole.add_slices()->add_extent()->set_length(1);
  whole.add_slices()->add_extent()->set_start(1);
  index.entries.emplace_back("partitioned", whole);
  index.entries.emplace_back(std::string("\0partitioned slice", 18), stored);
  RewriteBundleIndex(prefix, index);
  CheckpointReader reader(prefix);
  CHECK(reader.tensor_names() == std::vector<std::string>{"global_step", "partitioned", "w"});
  CHECK(reader.shape("partitioned") == std::vector<int64_t>{2});
  CHECK_THROWS_WITH(reader.tensor("partitioned"), Catch::Contains("'partitioned'") &&
                                                       Catch::Contains("partitioned variable"));
  reader.verify();
}

TEST_CASE("blobs are no tensors, and a blob that is not a string scalar is rejected", "[checkpoint]") {
  auto dir = FreshTempDir("bundle_blob_keys");
  const std::string prefix = CheckpointPrefix(dir.string(), 3);
  WriteCheckpoint(prefix, {{"w", at::ones({2})}}, {{"optimizer/adam", "state"}}, 3);
  CheckpointReader reader(prefix);
  CHECK(reader.tensor_names() == std::vector<std::string>{"global_step", "w"});
  CHECK(reader.blob_names() == std::vector<std::string>{"optimizer/adam"});
  CHECK_FALSE(reader.has_tensor("_est_blobs/optimizer/adam"));
  TensorBundleIndex index = ReadBundleIndex(prefix);
  FindEntry(index, "_est_blobs/optimizer/adam").set_dtype(proto::DT_INT8);
  RewriteBundleIndex(prefix, index);
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains("'optimizer/adam'") &&
                                                   Catch::Contains(IndexPath(prefix)));
}

TEST_CASE("damage anywhere in a bundle's index is refused or changes nothing read", "[checkpoint]") {
  auto dir = FreshTempDir("bundle_index_bytes");
  const std::string prefix = CheckpointPrefix(dir.string(), 5);
  const at::Tensor w = at::arange(6, at::kFloat);
  WriteCheckpoint(prefix, {{"w", w}}, {{"state", "payload"}}, 5);
  const std::string index = est::ReadFile(IndexPath(prefix));
  int refused = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    std::string damaged = index;
    damaged[i] = static_cast<char>(~damaged[i]);
    est::WriteFileAtomic(IndexPath(prefix), damaged);
    INFO("byte " << i);
    try {
      CheckpointReader reader(prefix);
      reader.verify();
      // Only bytes no reader looks at may change without notice: the empty metaindex block
      // (13 bytes, read only with a filter policy) and the footer's padding.
      CHECK(reader.tensor_names() == std::vector<std::string>{"global_step", "w"});
      CHECK(at::equal(reader.tensor("w"), w));
      CHECK(reader.global_step() == 5);
      CHECK(reader.blob("state") == "payload");
    } catch (const CheckpointError& error) {
      CHECK_THAT(error.what(), Catch::Contains(prefix));
      ++refused;
    }
  }
  CHECK(refused >= static_cast<int>(index.size()) - 13 - 40);
}


TEST_CASE("the string layout we write is byte for byte the one TensorFlow wrote", "[checkpoint]") {
  TensorBundleIndex index = DecodeBundleIndex(est::ReadFile(IndexPath(kTensorFlowPrefix)), IndexPath(kTensorFlowPrefix));
  const std::string data = est::ReadFile(DataPath(kTensorFlowPrefix, 0, 2));
  const std::vector<std::vector<std::string_view>> cases = {
      {"hello"}, {"", "tensor bundle", std::string_view("\0\xff bytes", 8)}};
  const std::vector<std::string> keys = {"string_scalar", "strings"};
  for (size_t i = 0; i < keys.size(); ++i) {
    INFO(keys[i]);
    const proto::BundleEntryProto& entry = FindEntry(index, keys[i]);
    const StringTensorLayout layout = LayOutStringTensor(cases[i]);
    std::string ours = layout.lengths_and_checksum;
    for (std::string_view element : cases[i]) ours.append(element);
    CHECK(static_cast<uint64_t>(entry.size()) == layout.size);
    CHECK(data.substr(static_cast<size_t>(entry.offset()), static_cast<size_t>(entry.size())) == ours);
    CHECK(entry.crc32c() == est::crc32c::Mask(layout.crc32c));
  }
}
