#include "estimator/train_and_evaluate.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <thread>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_state.h"

#include "common/error.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "distribute/strategy.h"
#include "estimator/training_end.h"

namespace est {
namespace {

EvalOptions OptionsOf(const EvalSpec& spec) {
  return EvalOptions().steps(spec.steps()).hooks(spec.hooks()).name(spec.name());
}

// Runs every exporter of `spec` after an evaluation of `checkpoint_path`; returns the
// version directories they wrote.
std::vector<std::string> RunExporters(Estimator& estimator, const EvalSpec& spec, const std::string& checkpoint_path,
                                      const EvalResult& result, bool is_the_final_export) {
  std::vector<std::string> written;
  for (const ExporterPtr& exporter : spec.exporters()) {
    const std::string export_path = (std::filesystem::path(estimator.model_dir()) / "export" / exporter->name()).string();
    if (std::optional<std::string> path =
            exporter->export_model(estimator, export_path, checkpoint_path, result, is_the_final_export))
      written.push_back(*path);
  }
  return written;
}

// Whether an evaluation at `global_step` is the training's last (max_steps reached).
bool ReachedMaxSteps(const TrainSpec& train_spec, int64_t global_step) {
  return train_spec.max_steps() && global_step >= *train_spec.max_steps();
}

// Evaluates new checkpoints during local training, throttled, and the final one at the end.
class EvaluateOnCheckpointListener : public CheckpointSaverListener {
 public:
  EvaluateOnCheckpointListener(Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& spec)
      : estimator_(estimator), train_spec_(train_spec), spec_(spec) {}

  bool after_save(Session& session, int64_t global_step) override {
    const auto now = Clock::now();
    if (last_eval_time_ && std::chrono::duration<double>(now - *last_eval_time_).count() < spec_.throttle_secs()) {
      Log().info("Skip the current checkpoint eval due to throttle secs ({} secs).", spec_.throttle_secs());
      return false;
    }
    evaluate(global_step, ReachedMaxSteps(train_spec_, global_step));
    return false;
  }

  // Training ended: its last checkpoint is evaluated (unless it was already) and exported as
  // the final export.
  void end(Session& session, int64_t global_step) override {
    if (last_evaluated_step_ != global_step) {
      evaluate(global_step, /*is_the_final_export=*/true);
    } else if (!final_exported_ && !StopSignalGuard::pending()) {
      last_result_.export_results =
          RunExporters(estimator_, spec_, last_checkpoint_, last_result_, /*is_the_final_export=*/true);
      final_exported_ = true;
    }
  }

  /// True once an evaluation ran.
  bool evaluated() const { return last_evaluated_step_.has_value(); }
  /// The results of the last evaluation and the exports after it.
  const TrainAndEvaluateResult& last_result() const { return last_result_; }

 private:
  using Clock = std::chrono::steady_clock;

  void evaluate(int64_t global_step, bool is_the_final_export) {
    if (const int signal_number = StopSignalGuard::pending()) {
      if (skipped_step_ != global_step)
        Log().info("Skipping the evaluation of global step {}: stopping on {}", global_step,
                   StopSignalName(signal_number));
      skipped_step_ = global_step;
      return;
    }
    last_checkpoint_ = estimator_.latest_checkpoint().value_or("");
    last_result_ = estimator_.evaluate(spec_.input_fn(), OptionsOf(spec_).checkpoint_path(last_checkpoint_));
    last_eval_time_ = Clock::now();
    last_evaluated_step_ = global_step;
    last_result_.export_results = RunExporters(estimator_, spec_, last_checkpoint_, last_result_, is_the_final_export);
    final_exported_ = is_the_final_export;
  }

  Estimator& estimator_;
  const TrainSpec& train_spec_;
  const EvalSpec& spec_;
  std::string last_checkpoint_;  ///< the checkpoint evaluated last
  bool final_exported_ = false;  ///< the exporters ran as the final export
  std::optional<Clock::time_point> last_eval_time_;
  std::optional<int64_t> last_evaluated_step_;
  std::optional<int64_t> skipped_step_;  // not evaluated: a stop signal is pending
  TrainAndEvaluateResult last_result_;
};

// Why a task of a cluster other than the evaluator has no metrics.
std::string NotEvaluatedBecause(const Estimator& estimator, const EvalSpec& eval_spec) {
  const auto& cluster = estimator.config().cluster;
  return Concat("task ", cluster.job(), " ", cluster.task_id,
                " of a cluster does not evaluate; a task of type 'evaluator' does, and writes its results to ",
                estimator.eval_dir(eval_spec.name()));
}

// Trains on the chief or a worker of a cluster.
EvalResult RunWorker(Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& eval_spec) {
  const auto& cluster = estimator.config().cluster;
  Log().info("Running training in distributed mode as task {} {} of {} training tasks ({}).", cluster.job(),
             cluster.task_id, cluster.num_worker_replicas, cluster.source);
  estimator.train(train_spec.input_fn(), TrainOptions().max_steps(train_spec.max_steps()).hooks(train_spec.hooks()));
  return EvalResult::NotEvaluated(NotEvaluatedBecause(estimator, eval_spec));
}

// A ps task: serves the training tasks until the chief finishes the job.
EvalResult RunPs(Estimator& estimator, const EvalSpec& eval_spec) {
  const auto& cluster = estimator.config().cluster;
  EST_CHECK(estimator.config().train_distribute != nullptr, ConfigError, "task type 'ps' needs ParameterServerStrategy: ",
            "set RunConfig::train_distribute (est-train --strategy parameter_server)");
  std::optional<StopSignalGuard> stop_signals;
  if (estimator.config().stop_on_signals) stop_signals.emplace();
  Log().info("Running ps task {} of {} ({}).", cluster.task_id, cluster.cluster.at("ps").size(), cluster.source);
  estimator.config().train_distribute->serve();
  return EvalResult::NotEvaluated(NotEvaluatedBecause(estimator, eval_spec));
}

// Sleeps `seconds`, or until `wake` (asked twice a second, when given) says to go on; throws
// Interrupted as soon as a stop signal is pending.
void SleepUnlessStopped(double seconds, const std::optional<std::string>& last_evaluated,
                        const std::function<bool()>& wake = nullptr) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  Clock::time_point next_wake_check = Clock::now() + std::chrono::milliseconds(500);
  while (true) {
    if (const int signal_number = StopSignalGuard::pending())
      throw Interrupted(Concat("evaluator stopped by ", StopSignalName(signal_number),
                               "; the last evaluated checkpoint was ", last_evaluated.value_or("none")),
                        signal_number);
    const Clock::time_point now = Clock::now();
    if (now >= end) return;
    if (wake && now >= next_wake_check) {
      if (wake()) return;
      next_wake_check = now + std::chrono::milliseconds(500);
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(end - now, std::chrono::milliseconds(50)));
  }
}

// How often an evaluator that waits for a checkpoint says so again.
constexpr std::chrono::seconds kWaitingLogInterval(60);

// The evaluator task: follows model_dir's checkpoints until the one at max_steps, or the one
// at which the chief recorded that this job's training ended (a hook stopped it, or its input
// ended), whichever comes first.
TrainAndEvaluateResult RunEvaluator(Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& eval_spec) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const std::string job = TrainingEndJob(estimator.config().cluster);
  // The global step at which this job's training ended, once the chief recorded it.
  const auto training_ended_at = [&]() -> std::optional<int64_t> {
    const std::optional<TrainingEnd> end = ReadTrainingEnd(estimator.model_dir());
    if (!end || end->job != job) return std::nullopt;
    return end->global_step;
  };
  // Whether the checkpoint of `step` is the training's last.
  const auto is_last = [&](int64_t step, std::optional<int64_t> ended_at) {
    return ReachedMaxSteps(train_spec, step) || ended_at == step;
  };
  const auto log_exit = [&](int64_t step) {
    if (ReachedMaxSteps(train_spec, step))
      Log().info("Exiting evaluation, global step {} >= train max_steps {}", step, *train_spec.max_steps());
    else
      Log().info("Exiting evaluation: the training ended at global step {} (recorded by the chief in {})", step,
                 (std::filesystem::path(estimator.model_dir()) / kTrainingEndName).string());
  };
  std::optional<StopSignalGuard> stop_signals;
  if (estimator.config().stop_on_signals) stop_signals.emplace();
  Log().info("Running the evaluator: waiting {} secs before the first evaluation.", eval_spec.start_delay_secs());
  SleepUnlessStopped(eval_spec.start_delay_secs(), std::nullopt);
  std::optional<std::string> last_evaluated;
  TrainAndEvaluateResult last_result;
  auto last_new_checkpoint = Clock::now();
  // A waiting message is logged when the evaluator starts to wait, then once a minute.
  std::optional<Clock::time_point> waiting_logged;
  auto log_waiting = [&](const char* message) {
    if (waiting_logged && Clock::now() - *waiting_logged < kWaitingLogInterval) return;
    Log().info("{}", message);
    waiting_logged = Clock::now();
  };
  std::optional<Clock::time_point> last_evaluation_start;
  while (true) {
    const auto pass_start = Clock::now();
    const std::optional<int64_t> ended_at = training_ended_at();
    std::optional<std::string> latest = checkpoint::LatestCheckpoint(estimator.model_dir());
    if (!latest) {
      log_waiting("Estimator is not trained yet. Will start an evaluation when a checkpoint is ready.");
    } else if (latest == last_evaluated) {
      const auto step = static_cast<int64_t>(last_result.at("global_step"));
      if (ended_at == step) {  // evaluated before the chief recorded the end: exported as the final export now
        last_result.export_results =
            RunExporters(estimator, eval_spec, *latest, last_result, /*is_the_final_export=*/true);
        log_exit(step);
        return last_result;
      }
      log_waiting("No new checkpoint ready for evaluation. Skip the current evaluation pass as evaluation results "
                  "are expected to be same for the same checkpoint.");
    } else {
      waiting_logged.reset();
      last_new_checkpoint = Clock::now();
      last_evaluation_start = pass_start;
      try {
        last_result = estimator.evaluate(eval_spec.input_fn(), OptionsOf(eval_spec).checkpoint_path(*latest));
        last_evaluated = latest;
        const auto step = static_cast<int64_t>(last_result.at("global_step"));
        last_result.export_results = RunExporters(estimator, eval_spec, *latest, last_result, is_last(step, ended_at));
        if (is_last(step, ended_at)) {
          log_exit(step);
          return last_result;
        }
      } catch (const CheckpointError& error) {
        if (checkpoint::CheckpointExists(*latest)) {
          if (!estimator.config().ignore_invalid_checkpoints) throw;
          // The chief trains from scratch over invalid checkpoints: wait for its new ones.
          Log().warn("Skipping invalid checkpoint {} (RunConfig::ignore_invalid_checkpoints): {}", *latest,
                     error.what());
          last_evaluated = latest;
        } else {
          Log().warn("Checkpoint {} was deleted before it could be evaluated (retention); skipping it: {}", *latest,
                     error.what());
        }
      }
    }
    EST_CHECK(seconds_since(last_new_checkpoint) < eval_spec.checkpoint_timeout_secs(), TimeoutError,
              "evaluator: no new checkpoint in model_dir ", estimator.model_dir(),
              std::filesystem::is_directory(estimator.model_dir()) ? "" : " (which does not exist)", " for ",
              eval_spec.checkpoint_timeout_secs(), " s (EvalSpec.checkpoint_timeout_secs); the last evaluated was ",
              last_evaluated.value_or("none"));
    // The next pass comes throttle_secs after the last evaluation began; until a new checkpoint
    // appears, and before the first, model_dir is looked at every second (or throttle_secs, when
    // shorter). The chief's record of the training's end ends the wait at once, throttle or not.
    const double poll = std::clamp(eval_spec.throttle_secs(), 0.05, 1.0);
    const double throttled = last_evaluation_start ? eval_spec.throttle_secs() - seconds_since(*last_evaluation_start) : 0;
    SleepUnlessStopped(std::max(throttled, poll), last_evaluated, [&] { return !ended_at && training_ended_at(); });
  }
}

TrainAndEvaluateResult RunLocal(Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& eval_spec) {
  Log().info("Running training and evaluation locally (non-distributed).");
  auto listener = std::make_shared<EvaluateOnCheckpointListener>(estimator, train_spec, eval_spec);
  estimator.train(train_spec.input_fn(), TrainOptions()
                                             .max_steps(train_spec.max_steps())
                                             .hooks(train_spec.hooks())
                                             .saving_listeners({listener}));
  if (!listener->evaluated()) {
    // Training was skipped (max_steps already reached): report the latest checkpoint.
    const std::string checkpoint = estimator.latest_checkpoint().value_or("");
    TrainAndEvaluateResult result = estimator.evaluate(eval_spec.input_fn(), OptionsOf(eval_spec).checkpoint_path(checkpoint));
    result.export_results = RunExporters(estimator, eval_spec, checkpoint, result, /*is_the_final_export=*/true);
    return result;
  }
  return listener->last_result();
}

}  // namespace

TrainAndEvaluateResult train_and_evaluate(Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& eval_spec) {
  EST_CHECK(static_cast<bool>(train_spec.input_fn()), ConfigError, "TrainSpec needs an input_fn");
  EST_CHECK(static_cast<bool>(eval_spec.input_fn()), ConfigError, "EvalSpec needs an input_fn");
  EST_CHECK(eval_spec.throttle_secs() >= 0, ConfigError, "EvalSpec.throttle_secs must be >= 0, got ",
            eval_spec.throttle_secs());
  EST_CHECK(eval_spec.start_delay_secs() >= 0, ConfigError, "EvalSpec.start_delay_secs must be >= 0, got ",
            eval_spec.start_delay_secs());
  EST_CHECK(eval_spec.checkpoint_timeout_secs() > 0, ConfigError,
            "EvalSpec.checkpoint_timeout_secs must be positive, got ", eval_spec.checkpoint_timeout_secs());
  EST_CHECK(eval_spec.steps().value_or(1) > 0, ConfigError, "EvalSpec.steps must be positive, got ",
            *eval_spec.steps());
  std::set<std::string> exporter_names;
  for (const ExporterPtr& exporter : eval_spec.exporters()) {
    EST_CHECK(exporter != nullptr, ConfigError, "EvalSpec.exporters holds a null exporter");
    EST_CHECK(exporter_names.insert(exporter->name()).second, ConfigError, "EvalSpec.exporters: two exporters are "
              "named '", exporter->name(), "'; each needs a directory of its own under model_dir/export");
  }
  const auto& cluster = estimator.config().cluster;
  if (cluster.is_local()) return RunLocal(estimator, train_spec, eval_spec);
  if (cluster.is_evaluator()) return RunEvaluator(estimator, train_spec, eval_spec);
  if (cluster.is_ps()) return RunPs(estimator, eval_spec);
  return RunWorker(estimator, train_spec, eval_spec);
}

}  // namespace est
