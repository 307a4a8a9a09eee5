#include "checkpoint/checkpoint_reader.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/error.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using namespace est::checkpoint::testing;
using est::CheckpointError;
using est::testing::FreshTempDir;

namespace {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

NamedTensors EveryKindOfTensor() {
  at::manual_seed(7);
  return {
      {"float32", at::randn({3, 4})},
      {"float64", at::randn({2, 5}, at::kDouble)},
      {"float16", at::randn({7}).to(at::kHalf)},
      {"bfloat16", at::randn({2, 3}).to(at::kBFloat16)},
      {"int32", at::arange(-6, 6, at::kInt).reshape({3, 4})},
      {"int64", at::arange(int64_t{1} << 40, (int64_t{1} << 40) + 10, at::kLong)},
      {"uint8", at::arange(256, at::kLong).to(at::kByte)},
      {"bool", at::arange(9).remainder(3).eq(0).reshape({3, 3})},
      {"complex64", at::randn({4}, at::kComplexFloat)},
      {"scalar", at::scalar_tensor(2.5, at::kDouble)},
      {"empty", at::empty({0, 3})},
      {"transposed", at::arange(12, at::kFloat).reshape({3, 4}).t()},
      {"strided_slice", at::arange(20, at::kLong).slice(0, 3, 17, 3)},
      {"requires_grad", at::ones({2}).requires_grad_()},
  };
}

std::string WriteSample(Format format, const std::string& dir, int64_t step = 11) {
  const std::string prefix = CheckpointPrefix(dir, step);
  WriteInFormat(format, prefix,
                {{"a", at::arange(16, at::kFloat)}, {"b", at::arange(16, at::kFloat) * 2}},
                {{"state", "payload"}}, step);
  return prefix;
}

/// Both formats, one after the other; the test's output names the one that failed.
Format EachFormat() {
  const Format format = GENERATE(Format::kBundle, Format::kManifest);
  UNSCOPED_INFO("format: " << FormatName(format));
  return format;
}

}  // namespace

TEST_CASE("every dtype and layout round-trips", "[checkpoint]") {
  const Format format = EachFormat();
  auto dir = FreshTempDir("reader_roundtrip");
  const std::string prefix = CheckpointPrefix(dir.string(), 938);
  const NamedTensors tensors = EveryKindOfTensor();
  REQUIRE_FALSE(tensors[11].second.is_contiguous());
  WriteInFormat(format, prefix, tensors, {}, 938);

  CheckpointReader reader(prefix);
  CHECK(reader.prefix() == prefix);
  CHECK(reader.global_step() == 938);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    names.push_back(name);
    INFO(name);
    REQUIRE(reader.has_tensor(name));
    CHECK(reader.dtype(name) == tensor.scalar_type());
    CHECK(reader.shape(name) == tensor.sizes().vec());
    const at::Tensor read = reader.tensor(name);
    CHECK(read.device().is_cpu());
    CHECK(read.is_contiguous());
    CHECK(read.sizes() == tensor.sizes());
    CHECK(at::equal(read, tensor.detach()));
  }
  // A bundle holds the step as TensorFlow does: the int64 scalar tensor global_step.
  if (format == Format::kBundle) names.push_back("global_step");
  std::sort(names.begin(), names.end());
  CHECK(reader.tensor_names() == names);
  CHECK(reader.tensor("scalar").dim() == 0);
  CHECK(reader.tensor("scalar").item<double>() == 2.5);
  CHECK(reader.tensor("transposed")[0][1].item<float>() == 4.0f);
  CHECK(reader.tensor("strided_slice")[2].item<int64_t>() == 9);
  reader.verify();
}

TEST_CASE("blobs round-trip byte for byte", "[checkpoint]") {
  const Format format = EachFormat();
  auto dir = FreshTempDir("reader_blobs");
  const std::string prefix = CheckpointPrefix(dir.string(), 1);
  const std::string binary("\0\x01\xff\n binary", 11);
  WriteInFormat(format, prefix, {},
                {{"optimizer", binary}, {"empty", ""}, {"input_position", "epoch=2;offset=640"}},
                1);
  CheckpointReader reader(prefix);
  CHECK(reader.tensor_names() ==
        (format == Format::kBundle ? std::vector<std::string>{"global_step"} : std::vector<std::string>{}));
  CHECK(reader.blob_names() == std::vector<std::string>{"empty", "input_position", "optimizer"});
  CHECK(reader.blob("optimizer") == binary);
  CHECK(reader.blob("empty") == std::string());
  CHECK(reader.blob("input_position") == "epoch=2;offset=640");
  CHECK_FALSE(reader.blob("absent").has_value());
  reader.verify();
}

TEST_CASE("an absent tensor is named along with some that exist", "[checkpoint]") {
  const Format format = EachFormat();
  auto dir = FreshTempDir("reader_absent");
  const std::string prefix = CheckpointPrefix(dir.string(), 1);
  WriteInFormat(format, prefix, {{"cnn.conv1.weight", at::ones({1})}, {"cnn.conv1.bias", at::ones({1})}},
                {}, 1);
  CheckpointReader reader(prefix);
  CHECK_FALSE(reader.has_tensor("cnn.weight"));
  CHECK_THROWS_WITH(reader.tensor("cnn.weight"), Catch::Contains("'cnn.weight'") &&
                                                     Catch::Contains("'cnn.conv1.weight'") &&
                                                     Catch::Contains(prefix));
  CHECK_THROWS_AS(reader.shape("cnn.weight"), CheckpointError);
  CHECK_THROWS_AS(reader.dtype("cnn.weight"), CheckpointError);
}

TEST_CASE("a flipped byte in a tensor fails with the file and the tensor named", "[checkpoint]") {
  auto dir = FreshTempDir("reader_flipped_tensor");
  const std::string prefix = WriteSample(EachFormat(), dir.string());
  FlipByte(DataPath(prefix), TensorOffset(prefix, "b") + 5);
  CheckpointReader reader(prefix);
  CHECK(at::equal(reader.tensor("a"), at::arange(16, at::kFloat)));
  CHECK_THROWS_WITH(reader.tensor("b"), Catch::Contains(DataPath(prefix)) &&
                                            Catch::Contains("tensor 'b'") &&
                                            Catch::Contains("CRC32C"));
  CHECK_THROWS_WITH(reader.verify(),
                    Catch::Contains(DataPath(prefix)) && Catch::Contains("tensor 'b'"));
}

TEST_CASE("a flipped byte in a blob fails when it is read", "[checkpoint]") {
  auto dir = FreshTempDir("reader_flipped_blob");
  const std::string prefix = WriteSample(EachFormat(), dir.string());
  FlipByte(DataPath(prefix), BlobOffset(prefix, "state"));
  CheckpointReader reader(prefix);
  CHECK_THROWS_WITH(reader.blob("state"),
                    Catch::Contains(DataPath(prefix)) && Catch::Contains("blob 'state'"));
  CHECK_THROWS_WITH(reader.verify(), Catch::Contains("blob 'state'"));
}

TEST_CASE("a truncated data file fails at open, naming it", "[checkpoint]") {
  auto dir = FreshTempDir("reader_truncated_data");
  const std::string prefix = WriteSample(EachFormat(), dir.string());
  TruncateFile(DataPath(prefix), std::filesystem::file_size(DataPath(prefix)) - 1);
  CHECK_THROWS_WITH(CheckpointReader(prefix),
                    Catch::Contains(DataPath(prefix)) && Catch::Contains("truncated"));
}

TEST_CASE("a missing data file fails at open, naming it", "[checkpoint]") {
  auto dir = FreshTempDir("reader_missing_data");
  const std::string prefix = WriteSample(EachFormat(), dir.string());
  std::filesystem::remove(DataPath(prefix));
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains(DataPath(prefix)));
}

TEST_CASE("a missing, truncated or garbage index fails at open, naming it", "[checkpoint]") {
  auto dir = FreshTempDir("reader_bad_index");
  CHECK_THROWS_WITH(CheckpointReader((dir / "model.ckpt-404").string()),
                    Catch::Contains(IndexPath((dir / "model.ckpt-404").string())));

  const std::string prefix = WriteSample(EachFormat(), dir.string());
  const std::string index = est::ReadFile(IndexPath(prefix));
  for (size_t length : {size_t{0}, size_t{1}, index.size() / 2, index.size() - 1}) {
    est::WriteFileAtomic(IndexPath(prefix), index.substr(0, length));
    CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains(IndexPath(prefix)));
  }
  est::WriteFileAtomic(IndexPath(prefix), "model_checkpoint_path: \"not an index\"\n");
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains(IndexPath(prefix)));
}

TEST_CASE("an index whose entries overrun the data file is rejected", "[checkpoint]") {
  auto dir = FreshTempDir("reader_overrun");
  const std::string prefix = WriteSample(EachFormat(), dir.string());
  SetTensorOffset(prefix, "b", std::filesystem::file_size(DataPath(prefix)) - 8);
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains(IndexPath(prefix)) &&
                                                  Catch::Contains("'b'") &&
                                                  Catch::Contains("beyond the end"));
}

TEST_CASE("a moved reader keeps reading, even after the files are deleted", "[checkpoint]") {
  auto dir = FreshTempDir("reader_moved");
  const std::string prefix = WriteSample(EachFormat(), dir.string());
  CheckpointReader first(prefix);
  CheckpointReader second(std::move(first));
  RemoveCheckpointFiles(prefix);
  CHECK(at::equal(second.tensor("b"), at::arange(16, at::kFloat) * 2));
  CHECK(second.blob("state") == "payload");
}

TEST_CASE("the index of another checkpoint fails its CRCs, naming the file and the tensor", "[checkpoint]") {
  auto dir = FreshTempDir("reader_other_index");
  const Format format = EachFormat();
  const std::string prefix = WriteSample(format, dir.string(), 11);
  const std::string other = CheckpointPrefix(dir.string(), 12);
  WriteInFormat(format, other, {{"a", at::arange(16, at::kFloat) + 1}, {"b", at::arange(16, at::kFloat) * 3}},
                {{"state", "PAYLOAD"}}, 12);
  est::WriteFileAtomic(IndexPath(prefix), est::ReadFile(IndexPath(other)));
  CheckpointReader reader(prefix);
  CHECK_THROWS_MATCHES(reader.verify(), CheckpointError,
                       est::testing::MessageMatches(Catch::Contains(DataPath(prefix)) &&
                                                    Catch::Contains("tensor 'a'") && Catch::Contains("CRC32C")));
}

TEST_CASE("an index whose shape disagrees with its byte size is rejected, naming both", "[checkpoint]") {
  auto dir = FreshTempDir("reader_wrong_shape");
  const std::string prefix = WriteSample(EachFormat(), dir.string());
  SetFirstDimension(prefix, "a", 15);
  CHECK_THROWS_MATCHES(CheckpointReader(prefix), CheckpointError,
                       est::testing::MessageMatches(Catch::Contains(IndexPath(prefix)) && Catch::Contains("'a'") &&
                                                    Catch::Contains("size of 64")));
}
