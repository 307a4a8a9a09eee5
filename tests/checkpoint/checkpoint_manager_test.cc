#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/latest_valid_checkpoint.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/file_size_limit.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using namespace est::checkpoint::testing;
using est::CheckpointError;
using est::testing::FreshTempDir;
namespace fs = std::filesystem;

namespace {

std::string Save(CheckpointManager& manager, int64_t step) {
  return manager.save(step, {{"w", at::full({4}, static_cast<double>(step))}},
                      {{"step", std::to_string(step)}});
}

std::vector<std::string> Prefixes(const fs::path& dir, std::initializer_list<int64_t> steps) {
  std::vector<std::string> prefixes;
  for (int64_t step : steps) prefixes.push_back(CheckpointPrefix(dir.string(), step));
  return prefixes;
}

/// The checkpoint files and the state file expected in a directory holding `steps`.
std::vector<std::string> FilesOf(std::initializer_list<int64_t> steps) {
  std::vector<std::string> names{"checkpoint"};
  for (int64_t step : steps) {
    const std::string prefix = "model.ckpt-" + std::to_string(step);
    names.push_back(DataPath(prefix));
    names.push_back(IndexPath(prefix));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("the manager keeps the newest keep_checkpoint_max on disk and in the state file",
          "[checkpoint]") {
  auto dir = FreshTempDir("manager_keep_max");
  CheckpointManager manager(dir.string(), RetentionOptions().keep_checkpoint_max(3));
  CHECK(manager.directory() == dir.string());
  CHECK_FALSE(manager.latest_checkpoint().has_value());
  for (int64_t step = 1; step <= 6; ++step)
    CHECK(Save(manager, step * 100) == CheckpointPrefix(dir.string(), step * 100));

  CHECK(ListDirectory(dir) == FilesOf({400, 500, 600}));
  CHECK(manager.checkpoints() == Prefixes(dir, {400, 500, 600}));
  CHECK(manager.latest_checkpoint() == CheckpointPrefix(dir.string(), 600));
  const auto state = ReadCheckpointState(dir.string());
  REQUIRE(state.has_value());
  CHECK(state->model_checkpoint_path == CheckpointPrefix(dir.string(), 600));
  CHECK(state->all_model_checkpoint_paths == Prefixes(dir, {400, 500, 600}));
  CHECK(state->all_model_checkpoint_timestamps.size() == 3);
  CHECK(CheckpointReader(CheckpointPrefix(dir.string(), 500)).tensor("w")[0].item<float>() ==
        500.0f);
}

TEST_CASE("keep_checkpoint_max 0 keeps every checkpoint", "[checkpoint]") {
  auto dir = FreshTempDir("manager_keep_all");
  CheckpointManager manager(dir.string(), RetentionOptions().keep_checkpoint_max(0));
  for (int64_t step = 1; step <= 7; ++step) Save(manager, step);
  CHECK(ListDirectory(dir) == FilesOf({1, 2, 3, 4, 5, 6, 7}));
  CHECK(ReadCheckpointState(dir.string())->all_model_checkpoint_paths ==
        Prefixes(dir, {1, 2, 3, 4, 5, 6, 7}));
}

TEST_CASE("keep_checkpoint_every_n_hours preserves checkpoints on disk but not in the list",
          "[checkpoint]") {
  auto dir = FreshTempDir("manager_every_n_hours");
  const double ten_ms_in_hours = 0.01 / 3600;
  CheckpointManager manager(
      dir.string(),
      RetentionOptions().keep_checkpoint_max(1).keep_checkpoint_every_n_hours(ten_ms_in_hours));
  for (int64_t step = 1; step <= 3; ++step) {
    Save(manager, step);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20));  // each save is due for preservation
  }
  CHECK(ListDirectory(dir) == FilesOf({1, 2, 3}));
  CHECK(manager.checkpoints() == Prefixes(dir, {3}));
  const auto state = ReadCheckpointState(dir.string());
  CHECK(state->all_model_checkpoint_paths == Prefixes(dir, {3}));
  CHECK(state->last_preserved_timestamp > 0);
  CHECK(state->last_preserved_timestamp < state->all_model_checkpoint_timestamps.at(0));

  auto control = FreshTempDir("manager_every_n_hours_control");
  CheckpointManager default_hours(control.string(), RetentionOptions().keep_checkpoint_max(1));
  for (int64_t step = 1; step <= 3; ++step) Save(default_hours, step);
  CHECK(ListDirectory(control) == FilesOf({3}));
}

TEST_CASE("saving a step again replaces it and moves it to the end", "[checkpoint]") {
  auto dir = FreshTempDir("manager_same_step");
  CheckpointManager manager(dir.string());
  Save(manager, 1);
  Save(manager, 2);
  manager.save(1, {{"w", at::full({4}, 42.0)}}, {});
  CHECK(manager.checkpoints() == Prefixes(dir, {2, 1}));
  CHECK(ReadCheckpointState(dir.string())->all_model_checkpoint_paths == Prefixes(dir, {2, 1}));
  CHECK(CheckpointReader(CheckpointPrefix(dir.string(), 1)).tensor("w")[0].item<float>() == 42.0f);
}

TEST_CASE("a new manager picks up the state file and its checkpoints count", "[checkpoint]") {
  auto dir = FreshTempDir("manager_recover");
  {
    CheckpointManager first(dir.string(), RetentionOptions().keep_checkpoint_max(3));
    for (int64_t step : {10, 20, 30}) Save(first, step);
  }
  CheckpointManager second(dir.string(), RetentionOptions().keep_checkpoint_max(3));
  CHECK(second.latest_checkpoint() == CheckpointPrefix(dir.string(), 30));
  CHECK(second.checkpoints() == Prefixes(dir, {10, 20, 30}));
  Save(second, 40);
  CHECK(ListDirectory(dir) == FilesOf({20, 30, 40}));
  CHECK(second.checkpoints() == Prefixes(dir, {20, 30, 40}));
}

TEST_CASE("the manager removes temporary files left by an interrupted save", "[checkpoint]") {
  auto dir = FreshTempDir("manager_leftovers");
  {
    CheckpointManager manager(dir.string());
    Save(manager, 1);
  }
  est::WriteFileAtomic((dir / "model.ckpt-2.data-00000-of-00001.tmp-123-abc").string(), "partial");
  est::WriteFileAtomic((dir / "checkpoint.tmp-456-def").string(), "partial");
  // A user's files that merely look alike stay: not our temporary pattern, or not a file
  // kind of checkpoints.
  const std::vector<std::string> users = {"model.ckpt-2.index.tmp-notes", "notes.txt.tmp-123-abc",
                                          "model.ckpt-2.index.bak.tmp-1-a", "events.tmp-77-ff"};
  for (const std::string& name : users) est::WriteFileAtomic((dir / name).string(), "a user's");
  CheckpointManager manager(dir.string());
  std::vector<std::string> expected = FilesOf({1});
  expected.insert(expected.end(), users.begin(), users.end());
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> listed = ListDirectory(dir);
  std::sort(listed.begin(), listed.end());
  CHECK(listed == expected);
}

TEST_CASE("a directory that cannot be created is named", "[checkpoint]") {
  auto dir = FreshTempDir("manager_uncreatable");
  est::WriteFileAtomic((dir / "file").string(), "a regular file");
  const std::string bad = (dir / "file" / "sub").string();
  CHECK_THROWS_AS(CheckpointManager(bad), CheckpointError);
  CHECK_THROWS_WITH(CheckpointManager(bad), Catch::Contains(bad));
}

TEST_CASE("a failed save leaves the previous checkpoint and the state file intact",
          "[checkpoint]") {
  auto dir = FreshTempDir("manager_failed_save");
  CheckpointManager manager(dir.string(), RetentionOptions().keep_checkpoint_max(1));
  const std::string first = Save(manager, 1);
  const std::string state_before = est::ReadFile((dir / "checkpoint").string());
  const std::string blocked = IndexPath(CheckpointPrefix(dir.string(), 2));
  fs::create_directories(fs::path(blocked) / "blocker");  // the index cannot be renamed onto it

  CHECK_THROWS_WITH(Save(manager, 2), Catch::Contains(CheckpointPrefix(dir.string(), 2)));
  CHECK(est::ReadFile((dir / "checkpoint").string()) == state_before);
  CHECK(LatestCheckpoint(dir.string()) == first);
  CHECK(manager.checkpoints() == std::vector<std::string>{first});
  CheckpointReader reader(first);
  reader.verify();
  CHECK(reader.blob("step") == "1");
  CHECK(ListDirectory(dir) == std::vector<std::string>{"checkpoint", DataPath("model.ckpt-1"),
                                                       IndexPath("model.ckpt-1"),
                                                       "model.ckpt-2.index"});

  fs::remove_all(blocked);
  Save(manager, 2);
  CHECK(ListDirectory(dir) == FilesOf({2}));
}

TEST_CASE("negative retention options are configuration errors", "[checkpoint]") {
  auto dir = FreshTempDir("manager_bad_options");
  CHECK_THROWS_AS(CheckpointManager(dir.string(), RetentionOptions().keep_checkpoint_max(-1)),
                  est::ConfigError);
  CHECK_THROWS_AS(
      CheckpointManager(dir.string(), RetentionOptions().keep_checkpoint_every_n_hours(-1)),
      est::ConfigError);
}

TEST_CASE("retention never deletes a file outside model_dir that a crafted state file lists",
          "[checkpoint]") {
  auto root = FreshTempDir("manager_escape");
  const fs::path dir = root / "model";
  const fs::path outside = root / "outside";
  fs::create_directories(dir);
  fs::create_directories(outside);
  const std::vector<std::string> victims = {IndexPath((outside / "model.ckpt-1").string()),
                                            DataPath((outside / "model.ckpt-1").string()),
                                            IndexPath((outside / "model.ckpt-2").string()),
                                            IndexPath((outside / "model.ckpt-3").string())};
  for (const auto& victim : victims) est::WriteFileAtomic(victim, "not yours");
  fs::create_directory_symlink(outside, dir / "link");
  est::WriteFileAtomic((dir / "checkpoint").string(),
                       "model_checkpoint_path: \"../outside/model.ckpt-1\"\n"
                       "all_model_checkpoint_paths: \"../outside/model.ckpt-1\"\n"
                       "all_model_checkpoint_paths: \"" + (outside / "model.ckpt-2").string() + "\"\n"
                       "all_model_checkpoint_paths: \"link/model.ckpt-3\"\n");
  LogCapture log;
  CheckpointManager manager(dir.string(),
                            RetentionOptions().keep_checkpoint_max(1).keep_checkpoint_every_n_hours(0));
  CHECK(manager.checkpoints().empty());
  CHECK_FALSE(manager.latest_checkpoint().has_value());
  CHECK_THAT(log.text(), Catch::Contains("../outside/model.ckpt-1") && Catch::Contains("link/model.ckpt-3") &&
                             Catch::Contains("nor ever deleted"));
  Save(manager, 10);
  Save(manager, 20);
  for (const auto& victim : victims) {
    CAPTURE(victim);
    CHECK(est::ReadFile(victim) == "not yours");
  }
  CHECK(manager.checkpoints() == Prefixes(dir, {20}));
  CHECK(ListDirectory(dir) == std::vector<std::string>{"checkpoint", "link", DataPath("model.ckpt-20"),
                                                       IndexPath("model.ckpt-20")});
}

TEST_CASE("a full disk during a save names the path and leaves the previous checkpoint current",
          "[checkpoint]") {
  auto dir = FreshTempDir("manager_full_disk");
  CheckpointManager manager(dir.string(), RetentionOptions().keep_checkpoint_max(1));
  const std::string first = Save(manager, 1);
  const std::string state_before = est::ReadFile((dir / "checkpoint").string());
  const std::string index_before = est::ReadFile(IndexPath(first));
  const std::string data_before = est::ReadFile(DataPath(first));
  const at::Tensor large = at::ones({1 << 16});  // 256 KiB, beyond the limit below
  {
    est::testing::FileSizeLimit full_disk(64 * 1024);
    CHECK_THROWS_MATCHES(manager.save(2, {{"w", large}}, {}), CheckpointError,
                         est::testing::MessageMatches(Catch::Contains(CheckpointPrefix(dir.string(), 2)) &&
                                                      Catch::Contains(DataPath(CheckpointPrefix(dir.string(), 2))) &&
                                                      Catch::Contains("File too large")));
  }
  CHECK(est::ReadFile((dir / "checkpoint").string()) == state_before);
  CHECK(est::ReadFile(IndexPath(first)) == index_before);
  CHECK(est::ReadFile(DataPath(first)) == data_before);
  CHECK(LatestCheckpoint(dir.string()) == first);
  CHECK(LatestValidCheckpoint(dir.string()) == first);
  CHECK(manager.checkpoints() == std::vector<std::string>{first});
  CHECK(ListDirectory(dir) == FilesOf({1}));

  SECTION("the disk fills up while the state file is written") {
    // The checkpoint's own files fit; the state file does not. A bundle's index outgrows the
    // state file unless the checkpoint is small: one element, no blob (measured beside).
    const std::vector<std::pair<std::string, at::Tensor>> small = {{"w", at::ones({1})}};
    const std::string measured = (FreshTempDir("manager_full_disk_measure") / "model.ckpt-2").string();
    WriteCheckpoint(measured, small, {}, 2);
    const auto limit = static_cast<rlim_t>(
        std::max(est::ReadFile(IndexPath(measured)).size(), est::ReadFile(DataPath(measured)).size()) + 8);
    REQUIRE(state_before.size() > limit + 8);
    {
      est::testing::FileSizeLimit full_disk(limit);
      CHECK_THROWS_MATCHES(manager.save(2, small, {}), CheckpointError,
                           est::testing::MessageMatches(Catch::Contains((dir / "checkpoint").string()) &&
                                                        Catch::Contains("File too large")));
    }
    CHECK(est::ReadFile((dir / "checkpoint").string()) == state_before);
    CHECK(LatestCheckpoint(dir.string()) == first);
    CHECK(manager.checkpoints() == std::vector<std::string>{first});
    CheckpointReader(first).verify();
  }
  SECTION("the next save after space is freed succeeds") {
    Save(manager, 2);
    CHECK(ListDirectory(dir) == FilesOf({2}));
  }
}
