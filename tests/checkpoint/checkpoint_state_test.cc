#include "checkpoint/checkpoint_state.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/error.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using est::testing::FreshTempDir;

namespace {

CheckpointState SampleState(const std::string& dir) {
  CheckpointState state;
  state.model_checkpoint_path = CheckpointPrefix(dir, 938);
  state.all_model_checkpoint_paths = {CheckpointPrefix(dir, 500), CheckpointPrefix(dir, 938)};
  state.all_model_checkpoint_timestamps = {1700000000.5, 1700000100.25};
  state.last_preserved_timestamp = 1699999999.5;
  return state;
}

}  // namespace

TEST_CASE("the state file is TensorFlow's text format with basenames", "[checkpoint]") {
  auto dir = FreshTempDir("state_text");
  WriteCheckpointState(dir.string(), SampleState(dir.string()));
  CHECK(est::ReadFile((dir / "checkpoint").string()) ==
        "model_checkpoint_path: \"model.ckpt-938\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-500\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-938\"\n"
        "all_model_checkpoint_timestamps: 1700000000.5\n"
        "all_model_checkpoint_timestamps: 1700000100.25\n"
        "last_preserved_timestamp: 1699999999.5\n");
}

TEST_CASE("ReadCheckpointState returns paths joined to the directory", "[checkpoint]") {
  auto dir = FreshTempDir("state_roundtrip");
  const CheckpointState written = SampleState(dir.string());
  WriteCheckpointState(dir.string(), written);
  const auto read = ReadCheckpointState(dir.string());
  REQUIRE(read.has_value());
  CHECK(read->model_checkpoint_path == written.model_checkpoint_path);
  CHECK(read->all_model_checkpoint_paths == written.all_model_checkpoint_paths);
  CHECK(read->all_model_checkpoint_timestamps == written.all_model_checkpoint_timestamps);
  CHECK(read->last_preserved_timestamp == written.last_preserved_timestamp);
}

TEST_CASE("ReadCheckpointState accepts absolute paths and TensorFlow's spelling", "[checkpoint]") {
  auto dir = FreshTempDir("state_tf_file");
  est::WriteFileAtomic((dir / "checkpoint").string(),
                       "model_checkpoint_path: \"/elsewhere/model.ckpt-20\"\n"
                       "all_model_checkpoint_paths: \"model.ckpt-10\"\n"
                       "all_model_checkpoint_paths: \"/elsewhere/model.ckpt-20\"\n"
                       "all_model_checkpoint_timestamps: 1699999999.0\n"
                       "all_model_checkpoint_timestamps: 1.7e9\n"
                       "last_preserved_timestamp: 1699999990.0\n");
  const auto state = ReadCheckpointState(dir.string());
  REQUIRE(state.has_value());
  CHECK(state->model_checkpoint_path == "/elsewhere/model.ckpt-20");
  CHECK(state->all_model_checkpoint_paths ==
        std::vector<std::string>{(dir / "model.ckpt-10").string(), "/elsewhere/model.ckpt-20"});
  CHECK(state->all_model_checkpoint_timestamps == std::vector<double>{1699999999.0, 1.7e9});
}

TEST_CASE("paths outside the directory are written unchanged", "[checkpoint]") {
  auto dir = FreshTempDir("state_outside");
  CheckpointState state;
  state.model_checkpoint_path = "/elsewhere/model.ckpt-3";
  WriteCheckpointState(dir.string(), state);
  CHECK(est::ReadFile((dir / "checkpoint").string()) ==
        "model_checkpoint_path: \"/elsewhere/model.ckpt-3\"\n");
}

TEST_CASE("a missing state file reads as nullopt and a bad one is an error naming it",
          "[checkpoint]") {
  auto dir = FreshTempDir("state_bad");
  CHECK_FALSE(ReadCheckpointState(dir.string()).has_value());
  CHECK_FALSE(LatestCheckpoint(dir.string()).has_value());
  CHECK_FALSE(ReadCheckpointState((dir / "absent").string()).has_value());

  const std::string path = (dir / "checkpoint").string();
  est::WriteFileAtomic(path, "model_checkpoint_path: \"unterminated\n");
  CHECK_THROWS_WITH(ReadCheckpointState(dir.string()),
                    Catch::Contains(path) && Catch::Contains("line 1"));
  est::WriteFileAtomic(path, "no_such_field: 3\n");
  CHECK_THROWS_WITH(ReadCheckpointState(dir.string()),
                    Catch::Contains(path) && Catch::Contains("no_such_field"));
  est::WriteFileAtomic(path, "all_model_checkpoint_paths: \"model.ckpt-1\"\n");
  CHECK_THROWS_WITH(ReadCheckpointState(dir.string()),
                    Catch::Contains(path) && Catch::Contains("model_checkpoint_path"));
  CHECK_THROWS_AS(LatestCheckpoint(dir.string()), est::CheckpointError);
}

TEST_CASE("LatestCheckpoint names the newest checkpoint when its index exists", "[checkpoint]") {
  auto dir = FreshTempDir("state_latest");
  CheckpointState state;
  state.model_checkpoint_path = CheckpointPrefix(dir.string(), 5);
  state.all_model_checkpoint_paths = {state.model_checkpoint_path};
  WriteCheckpointState(dir.string(), state);
  CHECK_FALSE(LatestCheckpoint(dir.string()).has_value());
  WriteCheckpoint(state.model_checkpoint_path, {{"w", at::ones({1})}}, {}, 5);
  CHECK(LatestCheckpoint(dir.string()) == state.model_checkpoint_path);
}

TEST_CASE("StepFromCheckpointPath reads the step after the last dash", "[checkpoint]") {
  CHECK(StepFromCheckpointPath("/tmp/m/model.ckpt-938") == 938);
  CHECK(StepFromCheckpointPath("model.ckpt-0") == 0);
  CHECK(StepFromCheckpointPath("/a-1/model.ckpt-9223372036854775807") == INT64_MAX);
  CHECK_FALSE(StepFromCheckpointPath("/tmp/m/model.ckpt").has_value());
  CHECK_FALSE(StepFromCheckpointPath("/a-1/model.ckpt").has_value());
  CHECK_FALSE(StepFromCheckpointPath("model.ckpt-").has_value());
  CHECK_FALSE(StepFromCheckpointPath("model.ckpt-12a").has_value());
  CHECK_FALSE(StepFromCheckpointPath("model.ckpt-99999999999999999999").has_value());
}

TEST_CASE("LatestCheckpoint refuses a state file that points outside the directory", "[checkpoint]") {
  const auto [dir, outside] = est::checkpoint::testing::MakeEscapeLayout(FreshTempDir("state_escape"));
  WriteCheckpoint((outside / "model.ckpt-9").string(), {{"w", at::ones({1})}}, {}, 9);
  const std::string state_path = (dir / "checkpoint").string();
  for (const std::string& entry : {std::string("../outside/model.ckpt-9"), (outside / "model.ckpt-9").string(),
                                   std::string("link/model.ckpt-9")}) {
    CAPTURE(entry);
    est::WriteFileAtomic(state_path, "model_checkpoint_path: \"" + entry + "\"\n");
    CHECK_THROWS_MATCHES(LatestCheckpoint(dir.string()), est::CheckpointError,
                         est::testing::MessageMatches(Catch::Contains(state_path) && Catch::Contains(entry) &&
                                                      Catch::Contains("not a checkpoint directly in") &&
                                                      Catch::Contains("expected a basename")));
  }
}
