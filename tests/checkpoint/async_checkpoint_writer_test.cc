#include "checkpoint/async_checkpoint_writer.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/file_size_limit.h"
#include "tests/test_util.h"

using est::checkpoint::AsyncCheckpointWriter;
using est::CheckpointError;
using est::ReadFile;
using est::checkpoint::CheckpointExists;
using est::checkpoint::CheckpointManager;
using est::checkpoint::CheckpointPrefix;
using est::checkpoint::CheckpointReader;
using est::checkpoint::DataPath;
using est::checkpoint::IndexPath;
using est::checkpoint::ReadCheckpointState;
using est::checkpoint::testing::BlockCheckpoint;
using est::testing::FreshTempDir;
using est::testing::MessageMatches;
namespace fs = std::filesystem;

namespace {

/// One tensor "w" of a million elements (4 MB, so that writing it takes a while) filled
/// with `value`.
AsyncCheckpointWriter::Tensors Weights(double value) {
  return {{"w", at::full({1 << 20}, value)}};
}

double SavedValue(const std::string& prefix) {
  const at::Tensor w = CheckpointReader(prefix).tensor("w");
  REQUIRE(at::equal(w, at::full_like(w, w[0].item<double>())));
  return w[0].item<double>();
}

}  // namespace

TEST_CASE("the async writer writes the same files as a synchronous save", "[async_checkpoint]") {
  const fs::path dir = FreshTempDir("async_writer_same_files");
  const AsyncCheckpointWriter::Tensors tensors = {
      {"dense/kernel", at::randn({64, 32})},
      {"transposed", at::randn({8, 4}).t()},
      {"ids", at::arange(10, at::kLong)},
      {"half", at::randn({3}).to(at::kHalf)},
      {"empty", at::zeros({0, 5})}};
  const std::map<std::string, std::string> blobs = {{"optimizer/sgd", std::string("state\0bytes", 11)}};

  CheckpointManager manager((dir / "sync").string());
  const std::string sync_prefix = manager.save(7, tensors, blobs);
  AsyncCheckpointWriter writer(CheckpointManager((dir / "async").string()));
  const std::string prefix = writer.save(7, tensors, blobs);
  CHECK(prefix == CheckpointPrefix((dir / "async").string(), 7));
  writer.wait();
  CHECK_FALSE(writer.saving());

  CHECK(ReadFile(DataPath(prefix)) == ReadFile(DataPath(sync_prefix)));
  CHECK(ReadFile(IndexPath(prefix)) == ReadFile(IndexPath(sync_prefix)));
  CheckpointReader reader(prefix);
  CHECK(reader.global_step() == 7);
  for (const auto& [name, tensor] : tensors) CHECK(at::equal(reader.tensor(name), tensor));
  CHECK(reader.blob("optimizer/sgd") == blobs.at("optimizer/sgd"));
  CHECK(ReadCheckpointState((dir / "async").string())->model_checkpoint_path == prefix);
}

TEST_CASE("tensors updated right after save() keep their saved values", "[async_checkpoint]") {
  const fs::path dir = FreshTempDir("async_writer_snapshot");
  AsyncCheckpointWriter writer(CheckpointManager(dir.string()));
  AsyncCheckpointWriter::Tensors live = Weights(1);
  const std::string prefix = writer.save(1, live, {});
  live[0].second.fill_(2);
  writer.wait();
  CHECK(SavedValue(prefix) == 1);
  CHECK(live[0].second[0].item<double>() == 2);
}

TEST_CASE("a save waits for the one before: order on disk and in the state file", "[async_checkpoint]") {
  const fs::path dir = FreshTempDir("async_writer_order");
  AsyncCheckpointWriter writer(CheckpointManager(dir.string()));
  std::vector<std::string> prefixes;
  for (int64_t step = 1; step <= 5; ++step) {
    prefixes.push_back(writer.save(step, Weights(static_cast<double>(step)), {{"step", std::to_string(step)}}));
    if (step == 1) continue;
    // When save() returns, every earlier checkpoint is complete and listed, in order.
    const std::vector<std::string> earlier(prefixes.begin(), prefixes.end() - 1);
    auto state = ReadCheckpointState(dir.string());
    REQUIRE(state.has_value());
    auto listed = state->all_model_checkpoint_paths;
    if (listed.size() == prefixes.size()) listed.pop_back();  // the new save finished already
    CHECK(listed == earlier);
    CHECK(CheckpointExists(earlier.back()));
  }
  writer.wait();
  const auto state = ReadCheckpointState(dir.string());
  CHECK(state->model_checkpoint_path == prefixes.back());
  CHECK(state->all_model_checkpoint_paths == prefixes);
  for (int64_t step = 1; step <= 5; ++step) {
    CHECK(SavedValue(prefixes[static_cast<size_t>(step - 1)]) == static_cast<double>(step));
    CHECK(CheckpointReader(prefixes[static_cast<size_t>(step - 1)]).blob("step") == std::to_string(step));
  }
}

TEST_CASE("a failed background save is rethrown once by the next save, earlier checkpoints stay",
          "[async_checkpoint]") {
  const fs::path dir = FreshTempDir("async_writer_next_save");
  AsyncCheckpointWriter writer(CheckpointManager(dir.string()));
  const std::string first = writer.save(1, Weights(1), {});
  writer.wait();
  BlockCheckpoint(dir.string(), 2);
  const std::string failed = writer.save(2, Weights(2), {});

  CHECK_THROWS_MATCHES(writer.save(3, Weights(3), {}), CheckpointError,
                       MessageMatches(Catch::Contains(DataPath(failed))));
  const std::string third = writer.save(3, Weights(3), {});
  writer.wait();

  CHECK_FALSE(CheckpointExists(failed));
  CHECK(SavedValue(first) == 1);
  CHECK(SavedValue(third) == 3);
  const auto state = ReadCheckpointState(dir.string());
  CHECK(state->model_checkpoint_path == third);
  CHECK(state->all_model_checkpoint_paths == std::vector<std::string>{first, third});
}

TEST_CASE("a save into a path under a regular file fails at wait() or check(), naming the path",
          "[async_checkpoint]") {
  const fs::path root = FreshTempDir("async_writer_wait");
  const fs::path model_dir = root / "model";
  AsyncCheckpointWriter writer(CheckpointManager(model_dir.string()));
  const std::string first = writer.save(1, Weights(1), {});
  writer.wait();
  // The model directory moves away and a regular file takes its place.
  fs::rename(model_dir, root / "moved");
  std::ofstream(model_dir) << "not a directory";

  writer.save(2, Weights(2), {});
  CHECK_THROWS_MATCHES(writer.wait(), CheckpointError, MessageMatches(Catch::Contains(model_dir.string())));
  CHECK_NOTHROW(writer.wait());

  writer.save(3, Weights(3), {});
  bool rethrown = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!rethrown && std::chrono::steady_clock::now() < deadline) {
    try {
      writer.check();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } catch (const CheckpointError& error) {
      CHECK_THAT(error.what(), Catch::Contains(model_dir.string()));
      rethrown = true;
    }
  }
  CHECK(rethrown);
  CHECK_FALSE(writer.saving());
  CHECK(SavedValue(CheckpointPrefix((root / "moved").string(), 1)) == 1);
}

TEST_CASE("destroying the writer waits for its save and logs a failure instead of throwing",
          "[async_checkpoint]") {
  const fs::path dir = FreshTempDir("async_writer_destructor");
  est::checkpoint::testing::LogCapture log;
  std::string written;
  {
    AsyncCheckpointWriter writer(CheckpointManager(dir.string()));
    written = writer.save(1, Weights(1), {});
  }
  CHECK(SavedValue(written) == 1);
  {
    AsyncCheckpointWriter writer(CheckpointManager(dir.string()));
    BlockCheckpoint(dir.string(), 2);
    writer.save(2, Weights(2), {});
  }
  CHECK_THAT(log.text(),
             Catch::Contains("not reported") && Catch::Contains(DataPath(CheckpointPrefix(dir.string(), 2))));
  CHECK(ReadCheckpointState(dir.string())->model_checkpoint_path == written);
}
