#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/latest_valid_checkpoint.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using namespace est::checkpoint::testing;
using est::testing::FreshTempDir;
namespace fs = std::filesystem;

namespace {

/// Saves steps 1, 2, 3 through a manager; returns their prefixes.
std::vector<std::string> SaveThree(const fs::path& dir) {
  CheckpointManager manager(dir.string());
  std::vector<std::string> prefixes;
  for (int64_t step = 1; step <= 3; ++step) {
    prefixes.push_back(manager.save(step, {{"w", at::full({8}, static_cast<double>(step))}}, {}));
  }
  return prefixes;
}

}  // namespace

TEST_CASE("LatestValidCheckpoint is the newest when it is intact", "[checkpoint]") {
  auto dir = FreshTempDir("valid_newest");
  const auto prefixes = SaveThree(dir);
  CHECK(LatestValidCheckpoint(dir.string()) == prefixes[2]);
}

TEST_CASE("LatestValidCheckpoint falls back past a corrupt newest checkpoint and says why",
          "[checkpoint]") {
  auto dir = FreshTempDir("valid_corrupt_data");
  const auto prefixes = SaveThree(dir);
  FlipByte(DataPath(prefixes[2]), TensorOffset(prefixes[2], "w") + 3);
  LogCapture log;
  CHECK(LatestValidCheckpoint(dir.string()) == prefixes[1]);
  CHECK_THAT(log.text(), Catch::Contains("warning") && Catch::Contains(prefixes[2]) &&
                             Catch::Contains("CRC32C"));
}

TEST_CASE("LatestValidCheckpoint skips truncated and missing files", "[checkpoint]") {
  auto dir = FreshTempDir("valid_truncated");
  const auto prefixes = SaveThree(dir);
  TruncateFile(IndexPath(prefixes[2]), 10);
  fs::remove(DataPath(prefixes[1]));
  CHECK(LatestValidCheckpoint(dir.string()) == prefixes[0]);
}

TEST_CASE("LatestValidCheckpoint finds checkpoints without a usable state file", "[checkpoint]") {
  auto dir = FreshTempDir("valid_no_state");
  const auto prefixes = SaveThree(dir);
  fs::remove(dir / "checkpoint");
  CHECK(LatestValidCheckpoint(dir.string()) == prefixes[2]);

  est::WriteFileAtomic((dir / "checkpoint").string(), "garbage {");
  LogCapture log;
  CHECK(LatestValidCheckpoint(dir.string()) == prefixes[2]);
  CHECK_THAT(log.text(), Catch::Contains((dir / "checkpoint").string()));
}

TEST_CASE("LatestValidCheckpoint looks beyond the state file's list", "[checkpoint]") {
  auto dir = FreshTempDir("valid_beyond_list");
  const auto prefixes = SaveThree(dir);
  const std::string older =
      CheckpointPrefix(dir.string(), 0);  // e.g. preserved, so no longer listed
  WriteCheckpoint(older, {{"w", at::zeros({8})}}, {}, 0);
  for (const auto& prefix : prefixes) FlipByte(DataPath(prefix), 0);
  CHECK(LatestValidCheckpoint(dir.string()) == older);
}

TEST_CASE("LatestValidCheckpoint is nullopt when nothing is valid", "[checkpoint]") {
  auto dir = FreshTempDir("valid_none");
  CHECK_FALSE(LatestValidCheckpoint(dir.string()).has_value());
  CHECK_FALSE(LatestValidCheckpoint((dir / "does_not_exist").string()).has_value());
  const auto prefixes = SaveThree(dir);
  for (const auto& prefix : prefixes) TruncateFile(DataPath(prefix), 1);
  CHECK_FALSE(LatestValidCheckpoint(dir.string()).has_value());
}

TEST_CASE("LatestValidCheckpoint never reads a checkpoint outside the directory", "[checkpoint]") {
  auto root = FreshTempDir("valid_escape");
  const fs::path dir = root / "model";
  const fs::path outside = root / "outside";
  const auto inside = SaveThree(dir);
  fs::create_directories(outside);
  WriteCheckpoint((outside / "model.ckpt-90").string(), {{"w", at::ones({1})}}, {}, 90);
  fs::create_symlink(outside / "model.ckpt-90.index", dir / "model.ckpt-80.index");
  fs::create_symlink(outside / "model.ckpt-90.data-00000-of-00001", dir / "model.ckpt-80.data-00000-of-00001");
  est::WriteFileAtomic((dir / "checkpoint").string(),
                       "model_checkpoint_path: \"../outside/model.ckpt-90\"\n"
                       "all_model_checkpoint_paths: \"" + (outside / "model.ckpt-90").string() + "\"\n");
  LogCapture log;
  CHECK(LatestValidCheckpoint(dir.string()) == inside[2]);
  CHECK_THAT(log.text(), Catch::Contains("../outside/model.ckpt-90") && Catch::Contains("model.ckpt-80") &&
                             Catch::Contains("is not in"));
}
