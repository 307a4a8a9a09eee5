#pragma once
/// HookRunner: the lifecycle of a loop's SessionRunHooks, and the values each asked for,
/// shared by the training, evaluation and prediction loops.

#include <optional>
#include <string>
#include <vector>

#include "estimator/estimator_spec.h"
#include "estimator/hooks/session_run_hook.h"

namespace est {

/// What one step of a loop offers its hooks.
struct StepOutputs {
  /// The step's loss.
  at::Tensor loss;
  /// "step": the global step the step's values were computed at (training: before the
  /// step; evaluation: the checkpoint's).
  int64_t step = 0;
  /// "global_step": the global step after the step.
  int64_t global_step = 0;
  /// The step's summaries and predictions, by name (either may be null).
  const TensorMap* summaries = nullptr;
  const TensorMap* predictions = nullptr;
};

/// The values `request` names out of `outputs`: "loss", "step", "global_step", a summary or
/// a prediction; `all_summaries` adds every summary. ConfigError naming a value that the
/// step does not offer, and what it offers.
RunValues SelectRunValues(const RunArgs& request, const StepOutputs& outputs);

/// The session of a loop that does not train (evaluation, prediction): the global step is
/// the checkpoint's, and save_checkpoint() is a ConfigError naming the mode.
class FixedStepSession : public Session {
 public:
  /// `model_dir` must outlive the session.
  FixedStepSession(Mode mode, const std::string& model_dir, int64_t global_step, bool is_chief)
      : mode_(mode), model_dir_(model_dir), global_step_(global_step), is_chief_(is_chief) {}
  Mode mode() const override { return mode_; }
  int64_t global_step() const override { return global_step_; }
  const std::string& model_dir() const override { return model_dir_; }
  bool is_chief() const override { return is_chief_; }
  std::string save_checkpoint() override;

 private:
  Mode mode_;
  const std::string& model_dir_;
  int64_t global_step_;
  bool is_chief_;
};

/// Runs hooks through one loop: begin() and after_create_session() when made, before_run()
/// and after_run() around each step, end() once.
class HookRunner {
 public:
  /// Calls begin(), then after_create_session(session), of every hook, in order.
  HookRunner(std::vector<HookPtr> hooks, Session& session);

  /// Calls before_run() of every hook for the step about to run.
  void before_step();
  /// Calls after_run() of every hook with what it asked for; true when one asked the loop
  /// to stop.
  bool after_step(const StepOutputs& outputs);
  /// Calls end(session) of every hook.
  void end();

 private:
  std::vector<HookPtr> hooks_;
  Session& session_;
  std::optional<RunContext> context_;  ///< of the step between before_step() and after_step()
  std::vector<RunArgs> requests_;
};

}  // namespace est
