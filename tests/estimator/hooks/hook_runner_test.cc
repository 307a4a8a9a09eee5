// HookRunner: one lifecycle and one selection of requested values for every loop.

#include "estimator/hooks/hook_runner.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "tests/estimator/hooks/fake_session.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

using namespace est;

namespace {

// Logs its calls into `log`; asks for `wanted`, and to stop at its second step.
class LoggingHook : public SessionRunHook {
 public:
  LoggingHook(std::string name, std::vector<std::string>& log, RunArgs wanted)
      : name_(std::move(name)), log_(log), wanted_(std::move(wanted)) {}
  void begin() override { log_.push_back(name_ + " begin"); }
  void after_create_session(Session& session) override {
    log_.push_back(name_ + " session at " + std::to_string(session.global_step()));
  }
  RunArgs before_run(RunContext&) override {
    log_.push_back(name_ + " before");
    return wanted_;
  }
  void after_run(RunContext& context, const RunValues& values) override {
    std::string got;
    for (const auto& [key, value] : values.results) got += " " + key + "=" + std::to_string(value.item<double>());
    log_.push_back(name_ + " after" + got);
    if (++steps_ == 2) context.request_stop();
  }
  void end(Session&) override { log_.push_back(name_ + " end"); }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  RunArgs wanted_;
  int steps_ = 0;
};

}  // namespace

TEST_CASE("HookRunner runs every hook's lifecycle in order and hands each what it asked for", "[estimator]") {
  est::testing::FakeSession session;
  session.step = 7;
  std::vector<std::string> log;
  const TensorMap summaries = {{"accuracy", at::scalar_tensor(0.5)}};
  {
    HookRunner runner({std::make_shared<LoggingHook>("a", log, RunArgs{{"loss", "step"}}),
                       std::make_shared<LoggingHook>("b", log, RunArgs{{"global_step"}, /*all_summaries=*/true})},
                      session);
    runner.before_step();
    CHECK_FALSE(runner.after_step({at::scalar_tensor(2.5), 3, 4, &summaries, nullptr}));
    runner.before_step();
    CHECK(runner.after_step({at::scalar_tensor(1.5), 4, 5, &summaries, nullptr}));
    runner.end();
  }
  CHECK(log == std::vector<std::string>{"a begin", "b begin", "a session at 7", "b session at 7", "a before",
                                        "b before", "a after loss=2.500000 step=3.000000",
                                        "b after accuracy=0.500000 global_step=4.000000", "a before", "b before",
                                        "a after loss=1.500000 step=4.000000",
                                        "b after accuracy=0.500000 global_step=5.000000", "a end", "b end"});
}

TEST_CASE("SelectRunValues names a value the step does not offer", "[estimator]") {
  const TensorMap predictions = {{"probabilities", at::ones({2})}};
  const StepOutputs outputs{at::scalar_tensor(1.0), 0, 0, nullptr, &predictions};
  CHECK(SelectRunValues(RunArgs{{"probabilities"}}, outputs).results.at("probabilities").numel() == 2);
  CHECK_THROWS_MATCHES(SelectRunValues(RunArgs{{"accuracy"}}, outputs), ConfigError,
                       est::testing::MessageMatches(Catch::Equals(
                           "a hook asked for 'accuracy', which is neither loss, step, global_step, a summary nor a "
                           "prediction of the model")));
}
