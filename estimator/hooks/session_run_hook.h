#pragma once
/// The SessionRunHook lifecycle of tf.train: begin, after_create_session, before_run,
/// after_run, end, and request_stop through the RunContext.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "estimator/mode.h"

namespace est {

/// What hooks may ask of the running training or evaluation loop (TF's MonitoredSession).
class Session {
 public:
  virtual ~Session() = default;
  /// The mode of the loop.
  virtual Mode mode() const = 0;
  /// Training steps taken so far (after the current step, inside after_run).
  virtual int64_t global_step() const = 0;
  /// The Estimator's model_dir.
  virtual const std::string& model_dir() const = 0;
  /// True on the process that writes checkpoints and summaries.
  virtual bool is_chief() const = 0;
  /// Saves model.ckpt-<global_step> into model_dir and returns its prefix (training only).
  virtual std::string save_checkpoint() = 0;
};

/// Names of the values a hook wants after the next step. Available names: "loss",
/// "step" (the global step the run started at), "global_step" (after it), every
/// EstimatorSpec summary, and every prediction.
struct RunArgs {
  std::vector<std::string> tensors;
  /// Also fetch every EstimatorSpec summary (their names are known only after the step).
  bool all_summaries = false;
};

/// The values asked for in RunArgs, after the step.
struct RunValues {
  std::map<std::string, at::Tensor> results;
};

/// Per-step context: the session and a way to stop the loop.
class RunContext {
 public:
  explicit RunContext(Session& session) : session_(session) {}
  /// Asks the loop to stop after this step; where workers step together, every worker stops
  /// after the next one, whose all-reduce tells them all (at max_steps, at once).
  void request_stop() { stop_requested_ = true; }
  /// True once a hook asked the loop to stop.
  bool stop_requested() const { return stop_requested_; }
  /// The running session.
  Session& session() const { return session_; }

 private:
  Session& session_;
  bool stop_requested_ = false;
};

/// A hook into the training or evaluation loop (tf.estimator.SessionRunHook).
class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;
  /// Before the loop starts; the model may not exist yet.
  virtual void begin() {}
  /// Once the session exists and the global step is known.
  virtual void after_create_session(Session& session) {}
  /// Before each step: names the values wanted in after_run.
  virtual RunArgs before_run(RunContext& context) { return {}; }
  /// After each step, with the values asked for.
  virtual void after_run(RunContext& context, const RunValues& values) {}
  /// After the last step, also when the loop stopped early.
  virtual void end(Session& session) {}
};

/// Hooks are shared: the same hook object may be passed to several loops.
using HookPtr = std::shared_ptr<SessionRunHook>;

/// Listens to checkpoint saves (tf.estimator.CheckpointSaverListener).
class CheckpointSaverListener {
 public:
  virtual ~CheckpointSaverListener() = default;
  /// Before the first save.
  virtual void begin() {}
  /// Before each save.
  virtual void before_save(Session& session, int64_t global_step) {}
  /// After each save; returning true asks training to stop.
  virtual bool after_save(Session& session, int64_t global_step) { return false; }
  /// At the end of training, after the last save.
  virtual void end(Session& session, int64_t global_step) {}
};

/// Listeners are shared like hooks.
using ListenerPtr = std::shared_ptr<CheckpointSaverListener>;

}  // namespace est
