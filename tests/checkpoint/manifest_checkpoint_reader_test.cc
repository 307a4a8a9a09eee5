// Checks that only the older manifest format has; those it shares with bundles are in
// checkpoint_reader_test.cc, which runs each on both.
#include "checkpoint/manifest_checkpoint_reader.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using namespace est::checkpoint::testing;
using est::testing::FreshTempDir;

namespace {

std::string WriteOld(const std::string& dir) {
  const std::string prefix = CheckpointPrefix(dir, 4);
  WriteManifestCheckpoint(prefix, {{"w", at::arange(4, at::kFloat)}, {"v", at::ones({2}, at::kLong)}},
                          {{"state", "payload"}}, 4);
  return prefix;
}

}  // namespace

TEST_CASE("a manifest checkpoint reads as it did, its step from the manifest", "[checkpoint]") {
  auto dir = FreshTempDir("manifest_reads");
  const std::string prefix = WriteOld(dir.string());
  const auto reader = OpenManifestCheckpoint(prefix, est::ReadFile(IndexPath(prefix)));
  CHECK(reader->global_step() == 4);
  CHECK(reader->tensor_names() == std::vector<std::string>{"v", "w"});
  CHECK(reader->data_type("w") == proto::DT_FLOAT);
  CHECK(reader->shape("v") == std::vector<int64_t>{2});
  CHECK(at::equal(reader->tensor("w"), at::arange(4, at::kFloat)));
  CHECK(reader->blob_names() == std::vector<std::string>{"state"});
  CHECK(reader->blob("state") == "payload");
  reader->verify();
}

TEST_CASE("a data file of another size than the manifest records is refused, naming both",
          "[checkpoint]") {
  auto dir = FreshTempDir("manifest_data_size");
  const std::string prefix = WriteOld(dir.string());
  est::WriteFileAtomic(DataPath(prefix), est::ReadFile(DataPath(prefix)) + "extra");
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains(DataPath(prefix)) &&
                                                  Catch::Contains(IndexPath(prefix)) &&
                                                  Catch::Contains("overwritten"));
}

TEST_CASE("a manifest listing a name twice or an unknown dtype is refused, naming it",
          "[checkpoint]") {
  auto dir = FreshTempDir("manifest_entries");
  const std::string prefix = WriteOld(dir.string());
  proto::Manifest manifest = ReadManifest(prefix);
  manifest.mutable_tensors(1)->set_name("w");
  est::WriteFileAtomic(IndexPath(prefix), EncodeIndex(manifest));
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains("'w' twice"));
  manifest = ReadManifest(WriteOld(dir.string()));
  manifest.mutable_tensors(0)->set_dtype(proto::DT_STRING);
  est::WriteFileAtomic(IndexPath(prefix), EncodeIndex(manifest));
  CHECK_THROWS_WITH(CheckpointReader(prefix), Catch::Contains("'w'") && Catch::Contains("DataType 7"));
}
