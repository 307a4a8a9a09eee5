#include "estimator/run_config.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/test_util.h"

using namespace est;

TEST_CASE("RunConfig has TensorFlow's defaults", "[estimator]") {
  RunConfig config;
  CHECK(config.save_summary_steps == 100);
  CHECK(config.keep_checkpoint_max == 5);
  CHECK(config.keep_checkpoint_every_n_hours == 10000);
  CHECK(config.log_step_count_steps == 100);
  CHECK_FALSE(config.tf_random_seed.has_value());
  CHECK(config.effective_save_checkpoints_secs() == 600.0);
  CHECK(config.flight_recorder_signal == SIGUSR1);
  CHECK_NOTHROW(config.validate());
}

TEST_CASE("RunConfig checkpoint interval follows TensorFlow's rule", "[estimator]") {
  RunConfig by_steps;
  by_steps.save_checkpoints_steps = 50;
  CHECK_FALSE(by_steps.effective_save_checkpoints_secs().has_value());
  RunConfig by_secs;
  by_secs.save_checkpoints_secs = 30;
  CHECK(by_secs.effective_save_checkpoints_secs() == 30.0);
}

TEST_CASE("RunConfig rejects invalid values naming the field", "[estimator]") {
  RunConfig both;
  both.save_checkpoints_steps = 10;
  both.save_checkpoints_secs = 10;
  CHECK_THROWS_WITH(both.validate(), Catch::Contains("save_checkpoints_steps") && Catch::Contains("save_checkpoints_secs"));

  auto expect_error = [](auto mutate, const std::string& field) {
    RunConfig config;
    mutate(config);
    CHECK_THROWS_MATCHES(config.validate(), ConfigError, est::testing::MessageMatches(Catch::Contains(field)));
  };
  expect_error([](RunConfig& c) { c.save_checkpoints_steps = 0; }, "save_checkpoints_steps");
  expect_error([](RunConfig& c) { c.save_checkpoints_secs = -1; }, "save_checkpoints_secs");
  expect_error([](RunConfig& c) { c.save_summary_steps = -1; }, "save_summary_steps");
  expect_error([](RunConfig& c) { c.keep_checkpoint_max = -2; }, "keep_checkpoint_max");
  expect_error([](RunConfig& c) { c.keep_checkpoint_every_n_hours = 0; }, "keep_checkpoint_every_n_hours");
  expect_error([](RunConfig& c) { c.log_step_count_steps = 0; }, "log_step_count_steps");
  expect_error([](RunConfig& c) { c.gradient_accumulation_steps = 0; }, "gradient_accumulation_steps must be positive, got 0");
  expect_error([](RunConfig& c) { c.flight_recorder_signal = SIGTERM; }, "flight_recorder_signal must be 0 (none), SIGUSR1");
  expect_error([](RunConfig& c) { c.flight_recorder_signal = -1; }, "got -1");
  for (int allowed : {0, SIGUSR1, SIGUSR2, SIGQUIT, SIGRTMIN, SIGRTMAX}) {
    RunConfig config;
    config.flight_recorder_signal = allowed;
    CHECK_NOTHROW(config.validate());
  }
}
