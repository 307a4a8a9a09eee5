// Estimator::predict runs hooks as TensorFlow's predict does: begin and the session when the
// first prediction is asked for, before/after each batch with the values asked for, end
// when the input ends, a hook stops the pass, or the pass is abandoned.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/error.h"
#include "estimator/estimator.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

using namespace est;
using est::testing::FreshTempDir;
using est::testing::RegressionData;
using est::testing::RegressionModelFn;

namespace {

// Logs its calls; asks for `wanted`; stops the pass after `stop_after` batches (0: never).
class PredictLogHook : public SessionRunHook {
 public:
  PredictLogHook(std::vector<std::string>& log, std::vector<std::string> wanted, int stop_after = 0)
      : log_(log), wanted_(std::move(wanted)), stop_after_(stop_after) {}
  void begin() override { log_.push_back("begin"); }
  void after_create_session(Session& session) override {
    log_.push_back("session " + std::to_string(session.global_step()) +
                   (session.mode() == Mode::kPredict ? " predict" : " other"));
    CHECK_THROWS_MATCHES(session.save_checkpoint(), ConfigError,
                         est::testing::MessageMatches(Catch::Contains("during prediction")));
  }
  RunArgs before_run(RunContext&) override {
    log_.push_back("before");
    return RunArgs{wanted_};
  }
  void after_run(RunContext& context, const RunValues& values) override {
    std::string got;
    for (const auto& [key, value] : values.results) got += " " + key + ":" + std::to_string(value.numel());
    log_.push_back("after" + got);
    if (++batches_ == stop_after_) context.request_stop();
  }
  void end(Session&) override { log_.push_back("end"); }

 private:
  std::vector<std::string>& log_;
  std::vector<std::string> wanted_;
  int stop_after_;
  int batches_ = 0;
};

InputFn PredictInput() {
  return [] { return RegressionData(16, /*repeat=*/false, std::nullopt); };  // 4 batches of 16
}

int Count(Predictions predictions) {
  int count = 0;
  for (const auto& prediction : predictions) count += prediction.count("y") == 1;
  return count;
}

}  // namespace

TEST_CASE("predict runs hooks around every batch and ends them at the end of the input", "[estimator]") {
  const std::string dir = FreshTempDir("predict_hooks").string();
  RunConfig config;
  config.tf_random_seed = 1;
  Estimator estimator(RegressionModelFn, dir, config);
  estimator.train([] { return RegressionData(16, true); }, TrainOptions().max_steps(3));

  std::vector<std::string> log;
  Predictions lazy = estimator.predict(
      PredictInput(), PredictOptions().hooks({std::make_shared<PredictLogHook>(log, std::vector<std::string>{
                                                                                    "y", "global_step"})}));
  CHECK(log.empty());  // nothing runs before the first prediction is asked for
  CHECK(Count(std::move(lazy)) == 64);
  const std::string after = "after global_step:1 y:16";
  CHECK(log == std::vector<std::string>{"begin", "session 3 predict", "before", after, "before", after, "before",
                                        after, "before", after, "before", "end"});

  SECTION("a hook's stop ends the pass after its batch") {
    log.clear();
    CHECK(Count(estimator.predict(PredictInput(), PredictOptions().hooks({std::make_shared<PredictLogHook>(
                                                      log, std::vector<std::string>{}, /*stop_after=*/2)}))) == 32);
    CHECK(log == std::vector<std::string>{"begin", "session 3 predict", "before", "after", "before", "after", "end"});
  }
  SECTION("an abandoned pass still ends its hooks") {
    log.clear();
    {
      Predictions predictions = estimator.predict(
          PredictInput(), PredictOptions().hooks({std::make_shared<PredictLogHook>(log, std::vector<std::string>{})}));
      REQUIRE(predictions.next().has_value());
    }
    CHECK(log == std::vector<std::string>{"begin", "session 3 predict", "before", "after", "end"});
  }
  SECTION("asking for the loss, which prediction does not compute, is a ConfigError") {
    Predictions predictions = estimator.predict(
        PredictInput(), PredictOptions().hooks({std::make_shared<PredictLogHook>(log, std::vector<std::string>{"loss"})}));
    CHECK_THROWS_MATCHES(predictions.next(), ConfigError,
                         est::testing::MessageMatches(Catch::Contains("'loss', which a prediction step does not compute")));
  }
}
