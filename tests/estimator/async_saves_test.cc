// Training with the chief's asynchronous checkpoint saves: listeners see complete
// checkpoints, a failed background save stops training with its CheckpointError, and a full
// disk leaves the last checkpoint as it was.

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "common/file_util.h"
#include "estimator/estimator.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/estimator/test_models.h"
#include "tests/file_size_limit.h"
#include "tests/test_util.h"

using est::CheckpointError;
using est::ReadFile;
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

est::RunConfig SaveEveryFiveSteps() {
  est::RunConfig config;
  config.tf_random_seed = 1;
  config.save_checkpoints_steps = 5;
  return config;
}

est::InputFn RegressionInput() {
  return [] { return est::testing::RegressionData(16, /*repeat=*/true); };
}

/// Checks, in after_save, that the checkpoint just saved is complete and the newest.
class CheckSavedListener : public est::CheckpointSaverListener {
 public:
  bool after_save(est::Session& session, int64_t global_step) override {
    const std::string prefix = CheckpointPrefix(session.model_dir(), global_step);
    CHECK(CheckpointReader(prefix).global_step() == global_step);
    CHECK(ReadCheckpointState(session.model_dir())->model_checkpoint_path == prefix);
    ++saves;
    return false;
  }
  int saves = 0;
};

}  // namespace

TEST_CASE("training with saving listeners hands them complete checkpoints", "[async_checkpoint]") {
  const std::string dir = FreshTempDir("async_writer_listeners").string();
  auto listener = std::make_shared<CheckSavedListener>();
  est::Estimator estimator(est::testing::RegressionModelFn, dir, SaveEveryFiveSteps());
  estimator.train(RegressionInput(), est::TrainOptions().max_steps(20).saving_listeners({listener}));
  CHECK(listener->saves == 4);
}

TEST_CASE("training stops with the CheckpointError of a failed background save", "[async_checkpoint]") {
  const std::string dir = FreshTempDir("async_writer_training").string();
  BlockCheckpoint(dir, 10);
  est::Estimator estimator(est::testing::RegressionModelFn, dir, SaveEveryFiveSteps());
  CHECK_THROWS_MATCHES(estimator.train(RegressionInput(), est::TrainOptions().max_steps(40)), CheckpointError,
                       MessageMatches(Catch::Contains(DataPath(CheckpointPrefix(dir, 10)))));
  // The checkpoint before the failure is intact and training resumes from it.
  CHECK(ReadCheckpointState(dir)->model_checkpoint_path == CheckpointPrefix(dir, 5));
  fs::remove_all(DataPath(CheckpointPrefix(dir, 10)));
  est::Estimator resumed(est::testing::RegressionModelFn, dir, SaveEveryFiveSteps());
  resumed.train(RegressionInput(), est::TrainOptions().max_steps(20));
  CHECK(resumed.latest_checkpoint() == CheckpointPrefix(dir, 20));
}

TEST_CASE("training on a full disk stops with a CheckpointError naming the path, the last checkpoint stays",
          "[async_checkpoint]") {
  const std::string dir = FreshTempDir("async_writer_full_disk").string();
  est::RunConfig config = SaveEveryFiveSteps();
  config.save_summary_steps = 0;  // only checkpoints write files
  est::Estimator(est::testing::RegressionModelFn, dir, config)
      .train(RegressionInput(), est::TrainOptions().max_steps(5));
  const std::string last = CheckpointPrefix(dir, 5);
  const std::string state_before = ReadFile(dir + "/checkpoint");
  const std::string index_before = ReadFile(IndexPath(last));
  const std::string data_before = ReadFile(DataPath(last));

  est::Estimator estimator(est::testing::RegressionModelFn, dir, config);
  {
    est::testing::FileSizeLimit full_disk(16);
    CHECK_THROWS_MATCHES(estimator.train(RegressionInput(), est::TrainOptions().max_steps(20)), CheckpointError,
                         MessageMatches(Catch::Contains(DataPath(CheckpointPrefix(dir, 10))) &&
                                        Catch::Contains("File too large")));
  }
  CHECK(ReadFile(dir + "/checkpoint") == state_before);
  CHECK(ReadFile(IndexPath(last)) == index_before);
  CHECK(ReadFile(DataPath(last)) == data_before);
  CHECK(estimator.latest_checkpoint() == last);
  for (const auto& entry : fs::directory_iterator(dir)) {
    CAPTURE(entry.path());
    CHECK_FALSE(est::IsTemporaryFileName(entry.path().filename().string()));
  }
  estimator.train(RegressionInput(), est::TrainOptions().max_steps(10));
  CHECK(estimator.latest_checkpoint() == CheckpointPrefix(dir, 10));
}
