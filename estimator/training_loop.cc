// The training loop of Estimator::train: a MonitoredTrainingSession in eager form.

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <unordered_set>

#include "checkpoint/async_checkpoint_writer.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/crash_point.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "distribute/flight_recorder_signal.h"
#include "distribute/optimizer/optimizer_step.h"
#include "distribute/replica_group.h"
#include "distribute/step_sync.h"
#include "distribute/strategy.h"
#include "estimator/async_host_copy.h"
#include "estimator/batch_signature.h"
#include "estimator/best_checkpoints.h"
#include "estimator/device_prefetcher.h"
#include "estimator/estimator_impl.h"
#include "estimator/gradient_processing.h"
#include "estimator/hooks/checkpoint_saver_hook.h"
#include "estimator/hooks/hook_runner.h"
#include "estimator/hooks/logging_tensor_hook.h"
#include "estimator/hooks/nan_tensor_hook.h"
#include "estimator/hooks/step_counter_hook.h"
#include "estimator/hooks/stop_at_step_hook.h"
#include "estimator/hooks/summary_saver_hook.h"
#include "estimator/loss_scaler.h"
#include "estimator/model_checkpoint.h"
#include "estimator/model_code_error.h"
#include "estimator/model_dir_lock.h"
#include "estimator/moving_averages.h"
#include "estimator/optimizer_groups.h"
#include "estimator/optimizer_step_in_parts.h"
#include "estimator/replica_set.h"
#include "estimator/schedules/set_learning_rate.h"
#include "estimator/step_input.h"
#include "estimator/training_end.h"

namespace est {
namespace {

// The summary tag of the learning rate a schedule set, as TensorFlow's.
constexpr const char* kLearningRateSummary = "learning_rate";

// The hooks TensorFlow's Estimator adds to every training run, after the user's.
std::vector<HookPtr> DefaultTrainingHooks(const RunConfig& config, const std::string& model_dir,
                                          const TrainOptions& options, bool is_chief) {
  std::vector<HookPtr> hooks;
  if (options.steps() || options.max_steps())
    hooks.push_back(std::make_shared<StopAtStepHook>(options.steps(), options.max_steps()));
  hooks.push_back(std::make_shared<NanTensorHook>("loss"));
  hooks.push_back(std::make_shared<LoggingTensorHook>(std::vector<std::string>{"loss", "step"},
                                                      config.log_step_count_steps));
  hooks.push_back(std::make_shared<StepCounterHook>(config.log_step_count_steps, std::nullopt,
                                                    is_chief && config.save_summary_steps > 0 ? model_dir : ""));
  if (is_chief) {
    if (config.save_summary_steps > 0)
      hooks.push_back(std::make_shared<SummarySaverHook>(config.save_summary_steps, std::nullopt, model_dir));
    hooks.push_back(std::make_shared<CheckpointSaverHook>(config.effective_save_checkpoints_secs(),
                                                          config.save_checkpoints_steps, options.saving_listeners()));
  }
  return hooks;
}

// The examples in a batch: the leading dimension of its first feature (or its labels).
int64_t BatchExamples(const data::Element& batch) {
  for (const auto& [name, tensor] : batch.features) {
    if (tensor.defined() && tensor.dim() > 0) return tensor.size(0);
  }
  return batch.labels.defined() && batch.labels.dim() > 0 ? batch.labels.size(0) : 0;
}

// The count that blob `name` of `reader` holds as decimal text.
int64_t ParseCountBlob(const std::string& text, const char* name, const checkpoint::CheckpointReader& reader) {
  size_t parsed = 0;
  int64_t count = -1;
  try {
    count = std::stoll(text, &parsed);
  } catch (const std::exception&) {
  }
  EST_CHECK(parsed == text.size() && count >= 0, CheckpointError, "checkpoint ", reader.prefix(), ": blob '", name,
            "' holds '", text, "', expected a non-negative count");
  return count;
}

// Continues `scaler` from the loss scale saved in `reader`, when it has one (a checkpoint
// written without loss scaling starts from the initial scale).
void RestoreLossScale(const checkpoint::CheckpointReader& reader, DynamicLossScaler& scaler) {
  if (!reader.has_tensor(kLossScaleName)) return;
  EST_CHECK(reader.has_tensor(kLossScaleGoodStepsName), CheckpointError, "checkpoint ", reader.prefix(), " has '",
            kLossScaleName, "' but not '", kLossScaleGoodStepsName, "'");
  const at::Tensor scale = reader.tensor(kLossScaleName);
  const at::Tensor good_steps = reader.tensor(kLossScaleGoodStepsName);
  EST_CHECK(scale.numel() == 1 && good_steps.numel() == 1, CheckpointError, "checkpoint ", reader.prefix(), ": '",
            kLossScaleName, "' and '", kLossScaleGoodStepsName, "' must be scalars, got shapes ", scale.sizes(),
            " and ", good_steps.sizes());
  const double scale_value = scale.item<double>();
  const int64_t good_steps_value = good_steps.item<int64_t>();
  EST_CHECK(scale_value > 0 && std::isfinite(scale_value) && good_steps_value >= 0, CheckpointError, "checkpoint ",
            reader.prefix(), " holds loss scale ", scale_value, " and good steps ", good_steps_value,
            "; expected a positive finite scale and a count >= 0");
  scaler.restore(scale_value, good_steps_value);
}

// Appends to `kept` each of `variables` that autograd does not train (buffers), with a copy
// of its value.
void KeepInitialValues(const NamedTensors& variables, std::vector<std::pair<at::Tensor, at::Tensor>>& kept) {
  for (const auto& [name, variable] : variables)
    if (!variable.requires_grad()) kept.emplace_back(variable, variable.detach().clone());
}

// The chooser of RunConfig::keep_best_checkpoints; null when it is unset.
checkpoint::ChooseKeptCheckpoints KeptBestCheckpoints(const Estimator::Impl& estimator) {
  const std::optional<KeepBestCheckpoints>& best = estimator.config.keep_best_checkpoints;
  if (!best) return nullptr;
  return BestCheckpoints(estimator.eval_dir(best->eval_name()), *best);
}

// Whether `strategy`'s workers can read logical input shards: one replica each, all stepping
// together (not the workers of parameter servers, which read at their own pace).
bool ReadsLogicalShards(const distribute::Strategy& strategy) {
  return strategy.num_local_replicas() == 1 && strategy.model_collective_workers() == strategy.num_workers();
}

// The logical input shards the training reads: RunConfig::logical_input_shards, else the
// checkpoint's, else one per worker of the largest group (Strategy::max_workers); 0 where
// each worker reads one pipeline of its own.
int LogicalInputShards(const RunConfig& config, const distribute::Strategy& strategy,
                       const checkpoint::CheckpointReader* resume_from) {
  std::optional<int64_t> saved;
  if (resume_from != nullptr) {
    if (std::optional<std::string> blob = resume_from->blob(kLogicalInputShardsBlob)) {
      saved = ParseCountBlob(*blob, kLogicalInputShardsBlob, *resume_from);
      EST_CHECK(*saved >= 1 && *saved <= kMaxLogicalInputShards, CheckpointError, "checkpoint ", resume_from->prefix(),
                ": blob '", kLogicalInputShardsBlob, "' holds ", *saved, ", expected 1 to ", kMaxLogicalInputShards);
    }
  }
  if (!ReadsLogicalShards(strategy)) {
    EST_CHECK(config.logical_input_shards == 0, ConfigError, "RunConfig::logical_input_shards (",
              config.logical_input_shards, ") needs workers of one replica each that step together; ", strategy.name(),
              " has ", strategy.num_local_replicas(), " replica(s) on this worker and ",
              strategy.model_collective_workers() == strategy.num_workers() ? "its workers step together"
                                                                            : "workers that step on their own",
              ": leave it 0");
    return 0;
  }
  if (config.logical_input_shards > 0) {
    if (saved && *saved != config.logical_input_shards)
      Log().warn(
          "The checkpoint's training input was read as {} logical shards and this run reads {}: each shard "
          "goes on from the position the old ones reached, which is not where their examples stopped",
          *saved, config.logical_input_shards);
    return config.logical_input_shards;
  }
  return saved ? static_cast<int>(*saved) : strategy.max_workers();
}

// One training run: owns the replicas' state, the input iterator and the hooks.
//
// The chief writes checkpoints asynchronously: save_checkpoint() copies the variables and
// returns while a background thread writes the files. When `complete_saves` is set (the
// run has CheckpointSaverListeners, whose after_save may read the checkpoint, as
// train_and_evaluate's evaluation does) it also waits for the files before returning.
// A background failure is rethrown after the next step or by the next save; run() waits
// for the last save, so every checkpoint is complete when train() returns.
class TrainingSession : public Session {
 public:
  // `restore` fills new state (from the checkpoint resumed, or warm-starting); `resume_from`
  // is the checkpoint the run continues, null when it starts afresh or warm-starts.
  TrainingSession(const Estimator::Impl& estimator, distribute::Strategy& strategy,
                  ModelContext::Initializers restore, std::shared_ptr<const checkpoint::CheckpointReader> resume_from,
                  bool complete_saves)
      : estimator_(estimator),
        strategy_(strategy),
        // Replica 0's new variables become the training's current values through the
        // strategy's VariableStore, which run() makes before model_fn first runs.
        replicas_(strategy, estimator.params, std::move(restore),
                  [this](const NamedTensors& variables) {
                    sync_.variables->initialize(variables);
                    if (moving_averages_) moving_averages_->track(variables);
                    if (initial_values_) KeepInitialValues(variables, *initial_values_);
                  },
                  estimator.config.channels_last, &estimator.config.cluster),
        checked_optimizers_(static_cast<size_t>(replicas_.size())),
        complete_saves_(complete_saves),
        accumulation_steps_(estimator.config.gradient_accumulation_steps) {
    if (auto options = estimator.config.effective_loss_scale()) {
      loss_scaler_.emplace(*options);
      if (resume_from) RestoreLossScale(*resume_from, *loss_scaler_);
    }
    if (strategy.is_chief() && estimator.config.moving_average)
      moving_averages_.emplace(*estimator.config.moving_average, resume_from);
    if (strategy.is_chief())
      checkpoint_writer_.emplace(checkpoint::CheckpointManager(
          estimator.model_dir, checkpoint::RetentionOptions()
                                   .keep_checkpoint_max(estimator.config.keep_checkpoint_max)
                                   .keep_checkpoint_every_n_hours(estimator.config.keep_checkpoint_every_n_hours)
                                   .also_keep(KeptBestCheckpoints(estimator))));
  }

  Mode mode() const override { return Mode::kTrain; }
  int64_t global_step() const override { return global_step_; }
  const std::string& model_dir() const override { return estimator_.model_dir; }
  bool is_chief() const override { return strategy_.is_chief(); }
  /// The loss of the last step taken (mean over replicas), undefined before the first.
  const at::Tensor& last_loss() const { return last_loss_; }
  /// The stop signal that ended the run (this process's, or SIGTERM when only a peer got
  /// one), 0 when the run was not stopped by a signal.
  int stopped_by_signal() const { return stopped_by_signal_; }
  /// The global step of the last checkpoint this run saved; nullopt before its first save.
  std::optional<int64_t> last_saved_step() const { return last_saved_step_; }

  std::string save_checkpoint() override {
    EST_CHECK(checkpoint_writer_.has_value(), ConfigError, "only the chief saves checkpoints; worker ",
              strategy_.worker_index(), " asked to");
    // Where the training's state is not replica 0's own (parameter servers), the
    // VariableStore brings it here first, with the progress it belongs to.
    const std::optional<distribute::TrainingProgress> progress =
        sync_.variables ? sync_.variables->before_save() : std::nullopt;
    const int64_t step = progress ? progress->global_step : global_step_;
    CheckpointContents contents = SnapshotModel(replicas_.replica(0), step);
    if (moving_averages_) moving_averages_->append_to(contents.tensors);
    contents.blobs[kInputPositionBlob] = std::to_string(input_position_);
    if (progress)
      for (const auto& [worker, position] : progress->input_positions)
        contents.blobs[WorkerInputPositionBlob(worker)] = std::to_string(position);
    if (batch_examples_ > 0) contents.blobs[kInputBatchExamplesBlob] = std::to_string(batch_examples_);
    if (logical_shards_ > 0) contents.blobs[kLogicalInputShardsBlob] = std::to_string(logical_shards_);
    if (loss_scaler_) {
      contents.tensors.emplace_back(kLossScaleName, at::scalar_tensor(loss_scaler_->scale(), at::kDouble));
      contents.tensors.emplace_back(kLossScaleGoodStepsName, at::scalar_tensor(loss_scaler_->good_steps(), at::kLong));
    }
    Log().info("Saving checkpoints for {} into {}/model.ckpt.", step, estimator_.model_dir);
    std::string prefix = checkpoint_writer_->save(step, contents.tensors, std::move(contents.blobs));
    if (complete_saves_) checkpoint_writer_->wait();
    last_saved_step_ = step;
    return prefix;
  }

  // `saved_batch_examples`: the examples per batch of the run that wrote the checkpoint
  // whose input position `skip_batches` is, when it recorded them. `logical_shards`: the
  // logical input shards the workers read (LogicalInputShards), 0 for one pipeline each.
  // Trains from `start_step` until `last_step` (steps or max_steps; unset: until the input ends).
  // `joins_running_group`: this worker joined a group already training (a newcomer), whose
  // step, state and input position it takes from the chief instead.
  void run(const InputFn& input_fn, std::vector<HookPtr> hooks, int64_t start_step, std::optional<int64_t> last_step,
           int64_t skip_batches, std::optional<int64_t> saved_batch_examples, int logical_shards,
           bool joins_running_group) {
    global_step_ = start_step;
    logical_shards_ = logical_shards;
    // A group that re-forms without a lost worker hands its logical shards to the others.
    EST_CHECK(logical_shards > 0 || !strategy_.recovers_lost_workers(), ConfigError, strategy_.name(),
              ": in-job recovery (min_workers) needs workers of one replica each, which read logical input shards; "
              "this worker has ",
              replicas_.size(), " replicas");
    // Every worker of the group, as large as it may grow, reads one shard or more.
    if (logical_shards > 0) CheckLogicalShardsCover(logical_shards, strategy_.max_workers());
    if (logical_shards > 0) sync_options_.micro_batches_in_sync = logical_shards * accumulation_steps_;
    sync_options_.fused_optimizer_step = estimator_.config.fused_optimizer_step;
    if (strategy_.is_chief()) sync_options_.restore_latest_checkpoint = [this] { return restore_latest_checkpoint(); };
    // A step's batches: micro-batch m of local replica r at index m * replicas + r. The next
    // step's batches are read before this step synchronizes, and whether every worker got
    // them travels in this step's all-reduce, so a step synchronizes once.
    std::vector<data::Element> current;
    std::vector<data::Element> upcoming;
    distribute::StepFlags stop;
    StepInput input = joins_running_group
                          ? reform_group(input_fn, std::nullopt, {}, current, stop, nullptr)
                          : start_group_input(input_fn, start_step, skip_batches, saved_batch_examples, current, stop);
    upcoming.resize(current.size());
    HookRunner runner(std::move(hooks), *this);
    DevicePrefetcher prefetcher(strategy_.local_devices(), estimator_.config.channels_last);
    prefetcher.start(current);
    BatchSignature batch_signature;
    // A hook's request to stop: a worker that trains alone stops at once. Workers that step
    // together would wait for one that stopped alone until their timeout: the request rides
    // the next step's flags and every worker stops after that step (at max_steps, which every
    // worker of such a group reaches at the same step, at once).
    bool hook_requested_stop = false;
    while (!stop.input_ended && !stop.stop_signal && !stop.job_finished && !stop.stop_requested) {
      prefetcher.wait(current);
      batch_signature.check(current, global_step_);
      runner.before_step();
      distribute::StepFlags local;
      local.input_ended = !input.read(upcoming, global_step_);
      local.stop_signal = StopSignalGuard::pending() != 0;
      local.stop_requested = hook_requested_stop;
      local.newcomer_waiting = strategy_.newcomer_waiting();
      prefetcher.start(upcoming);  // copied onto the devices while this step computes
      EstimatorSpec spec;
      try {
        spec = step(current, local, stop);
      } catch (const Error& failure) {
        if (!RecoversFrom(failure)) throw;
        Log().warn("The step after global step {} failed: {}", global_step_, failure.what());
        prefetcher.wait(upcoming);
        // What it read ahead, the failed step's batches then the next step's, is where the
        // input goes on if the chief's position is this worker's.
        std::vector<const std::vector<data::Element>*> read_ahead;
        if (!local.input_ended) read_ahead = {&current, &upcoming};
        input =
            reform_group(input_fn, std::move(input), read_ahead, current, stop, [this] { return strategy_.regroup(); });
        upcoming.assign(current.size(), {});
        prefetcher.start(current);
        continue;
      }
      input_position_ += position_per_step_;
      last_loss_ = spec.loss;
      CrashPoint("after_step", global_step_);
      if (checkpoint_writer_) checkpoint_writer_->check();
      loss_to_host_.wait();
      const bool requested = runner.after_step({spec.loss, global_step_ - 1, global_step_, &spec.summaries,
                                                &spec.predictions});
      if (requested && (strategy_.num_workers() == 1 || (last_step && global_step_ >= *last_step))) break;
      hook_requested_stop = hook_requested_stop || requested;
      std::swap(current, upcoming);
      if (stop.newcomer_waiting && !stop.input_ended && !stop.stop_signal && !stop.stop_requested &&
          !hook_requested_stop) {
        prefetcher.wait(current);
        input = reform_group(input_fn, std::move(input), {&current}, current, stop, [this] {
          strategy_.admit_newcomers();
          return true;
        });
        upcoming.assign(current.size(), {});
        prefetcher.start(current);
      }
    }
    if (stop.stop_signal) {
      const int local_signal = StopSignalGuard::pending();
      stopped_by_signal_ = local_signal != 0 ? local_signal : SIGTERM;
      Log().warn("Stopping at global step {}: {}", global_step_,
                 local_signal != 0 ? std::string("received ") + StopSignalName(local_signal)
                                   : std::string("another worker received a stop signal"));
    } else if (stop.input_ended && last_step && global_step_ < *last_step) {
      Log().warn("The input ended at global step {}, before the {} steps asked for (max_steps {}): training stopped "
                 "early. To train until max_steps, repeat the training dataset in input_fn (Dataset::repeat())",
                 global_step_, *last_step - start_step, *last_step);
    } else if (stop.input_ended) {
      Log().info("Input exhausted at global step {}: stopping training", global_step_);
    } else if (stop.job_finished) {
      Log().info("The chief finished the job's training at global step {}: stopping", global_step_);
    } else if (stop.stop_requested) {
      Log().info("Stopping at global step {}: {}", global_step_,
                 hook_requested_stop ? "a hook requested it" : "a hook of another worker requested it");
    }
    runner.end();
    if (checkpoint_writer_) checkpoint_writer_->wait();
    finish_together();
  }

 private:
  // start_input, where a worker lost meanwhile (before the first step) leaves the others to
  // re-form the group without it and start there, dealing every logical shard afresh.
  StepInput start_group_input(const InputFn& input_fn, int64_t start_step, int64_t skip_batches,
                              std::optional<int64_t> saved_batch_examples, std::vector<data::Element>& current,
                              distribute::StepFlags& stop) {
    try {
      return start_input(input_fn, start_step, skip_batches, saved_batch_examples, current, stop);
    } catch (const Error& failure) {
      if (!RecoversFrom(failure)) throw;
      Log().warn("Starting the training failed: {}", failure.what());
      // The chief's position is where every worker starts, whether or not it moved there yet.
      input_position_ = std::max(input_position_, skip_batches);
      return reform_group(input_fn, std::nullopt, {}, current, stop, [this] { return strategy_.regroup(); });
    }
  }

  // The input of a worker that starts with the group: its logical shards or pipeline, moved
  // past the `skip_batches` a checkpoint (or the VariableStore) says were consumed, with the
  // first step's batches read into `current` and `stop.input_ended` set where any worker's
  // input ended before them.
  StepInput start_input(const InputFn& input_fn, int64_t start_step, int64_t skip_batches,
                        std::optional<int64_t> saved_batch_examples, std::vector<data::Element>& current,
                        distribute::StepFlags& stop) {
    StepInput input =
        logical_shards_ > 0
            ? StepInput::LogicalShards(
                  input_fn, logical_shards_,
                  LogicalShardsOfWorker(logical_shards_, strategy_.num_workers(), strategy_.worker_index()),
                  accumulation_steps_)
            : StepInput::Pipeline(input_fn, strategy_.input_context(), replicas_.size() * accumulation_steps_);
    shape_steps(static_cast<int64_t>(input.batches_per_step()), input.position_per_step());
    if (logical_shards_ > 0 && strategy_.num_workers() > 1)
      Log().info("Training input: {} logical shards; this worker reads {} of them", logical_shards_,
                 input.shards().size());
    sync_ = strategy_.make_training_sync(sync_options_);
    EST_ASSERT(sync_.step && sync_.variables, strategy_.name(),
               "::make_training_sync gave no StepSync or VariableStore");
    if (std::optional<int64_t> position = sync_.variables->resume_position()) skip_batches = *position;
    if (skip_batches > 0) {
      const auto started = std::chrono::steady_clock::now();
      input_position_ =
          input.skip_to(skip_batches, global_step_, [this](const data::Element& first) { create_variables(first); });
      Log().info("Continued the input where checkpoint step {} left it: skipped {} batches in {:.3f} s", start_step,
                 input_position_, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    current.assign(input.batches_per_step(), {});
    CrashPoint("start_input", global_step_);
    stop.input_ended = sync_.step->any_worker(!input.read(current, global_step_));
    EST_CHECK(!stop.input_ended || skip_batches > 0, DataError, "the training input_fn's dataset gave ",
              strategy_.num_workers() > 1 ? "a worker " : "", "fewer than the ", current.size(),
              " batch(es) of one step: check its files (an empty file list or empty files) and filters");
    batch_examples_ = BatchExamples(current.front());
    if (skip_batches > 0 && saved_batch_examples && *saved_batch_examples != batch_examples_) {
      Log().warn(
          "Resuming at global step {} with batches of {} examples, but the checkpoint was written with "
          "batches of {}: the input position is counted in batches, so the {} batches skipped are {:.0f} "
          "examples of this input where the first run consumed {:.0f}",
          start_step, batch_examples_, *saved_batch_examples, skip_batches,
          static_cast<double>(skip_batches) * static_cast<double>(batch_examples_),
          static_cast<double>(skip_batches) * static_cast<double>(*saved_batch_examples));
    }
    return input;
  }

  // The step's shape: `batches_per_step` batches over this worker's replicas (each replica's
  // micro-batches), a step moving the input position by `position_per_step`.
  void shape_steps(int64_t batches_per_step, int64_t position_per_step) {
    position_per_step_ = position_per_step;
    micro_batches_ = batches_per_step / replicas_.size();
    sync_options_.micro_batches = micro_batches_;
  }

  // Whether the training goes on after `failure`, a step's: a collective's for a lost or
  // silent peer, where the strategy re-forms the group without it.
  bool RecoversFrom(const Error& failure) const {
    return strategy_.recovers_lost_workers() && (dynamic_cast<const CommunicationError*>(&failure) != nullptr ||
                                                 dynamic_cast<const TimeoutError*>(&failure) != nullptr);
  }

  // Re-forms the training group and this worker's input in it. `form` forms the next group
  // (Strategy::regroup after a failure, admit_newcomers between steps; false: it cannot, and
  // the exception being handled is rethrown); null for a newcomer, which the group has taken
  // in. Then every worker takes the chief's counters, variables, optimizer state and loss
  // scale (a newcomer creates its variables first, on its first batch), and the logical
  // shards are dealt again: a worker keeps the iterators of those it `held` and still reads,
  // and gives first what it read ahead of them (`read_ahead`: whole steps, read from its
  // position) where the chief's position is the one it read from; any other shard is opened
  // at the chief's position; a worker the group took back as a newcomer (it went on without
  // it while it was stopped) holds none. Nothing of a failed step counts unless the chief
  // applied it.
  // Returns the input, with the next step's batches in `current` and `stop` saying whether
  // it ended. A worker lost meanwhile starts the sequence again, without it.
  StepInput reform_group(const InputFn& input_fn, std::optional<StepInput> held,
                         const std::vector<const std::vector<data::Element>*>& read_ahead,
                         std::vector<data::Element>& current, distribute::StepFlags& stop,
                         const std::function<bool()>& form) {
    const int64_t read_from = input_position_;
    std::exception_ptr failure = std::current_exception();
    sync_ = {};  // its StepSync reduces over the collective that the new group replaces
    bool formed = form ? form() : true;
    while (true) {
      if (!formed) std::rethrow_exception(failure);
      // The group went on without this worker while it was stopped: others read its shards.
      if (held && strategy_.rejoined_as_newcomer()) held.reset();
      try {
        take_chief_counters();
        const std::vector<int> shards = regrouped_shards(held ? held->shards() : std::vector<int>{});
        // What StepInput::LogicalShards(…, shards, accumulation_steps_) gives a step.
        shape_steps(accumulation_steps_ * static_cast<int64_t>(shards.size()), accumulation_steps_);
        sync_ = strategy_.make_training_sync(sync_options_);
        const bool kept = held && !read_ahead.empty() && input_position_ == read_from;
        std::optional<StepInput> next;
        int64_t reached = input_position_;
        std::optional<bool> first_read;  // a newcomer's first step's batches, read where it starts
        if (replicas_.replica(0).variables().empty()) {
          next = StepInput::LogicalShards(input_fn, logical_shards_, shards, accumulation_steps_);
          const auto create = [this](const data::Element& first) {
            // Before it takes part in the group's state: a newcomer started with another batch
            // size would weigh its gradients unlike the others'.
            const int64_t examples = BatchExamples(first);
            EST_CHECK(group_batch_examples_ == 0 || examples == group_batch_examples_, ConfigError,
                      "this worker's batches hold ", examples, " examples, the training group's ",
                      group_batch_examples_, " (the chief's): every worker must batch alike (the same est-train "
                      "--batch-size, the same input_fn)");
            create_variables(first);
          };
          if (input_position_ > 0) {
            reached = next->skip_to(input_position_, global_step_, create);
          } else {
            current.assign(next->batches_per_step(), {});
            first_read = next->read(current, global_step_);
            if (*first_read) create(current.front());
          }
        } else {
          take_chief_variables();
        }
        take_chief_optimizers();
        const size_t read_before = !kept ? 0 : std::count_if(shards.begin(), shards.end(), [&](int shard) {
          return std::find(held->shards().begin(), held->shards().end(), shard) != held->shards().end();
        });
        if (kept) {
          auto [regrouped, position] = std::move(*held).Regroup(input_fn, shards, input_position_, read_ahead);
          next.emplace(std::move(regrouped));
          reached = position;
        } else if (!next) {
          next = StepInput::LogicalShards(input_fn, logical_shards_, shards, accumulation_steps_);
          reached = next->skip_to(input_position_, global_step_, [](const data::Element&) {});
        }
        held.reset();
        Log().info(
            "Training input: {} logical shards; this worker reads {} of them, going on with the {} it read before",
            logical_shards_, shards.size(), read_before);
        if (!first_read) {
          current.assign(next->batches_per_step(), {});
          first_read = next->read(current, global_step_);
        }
        stop = {};
        stop.input_ended = sync_.step->any_worker(reached < input_position_ || !*first_read);
        if (batch_examples_ == 0 && *first_read) batch_examples_ = BatchExamples(current.front());
        Log().warn("Training goes on from global step {} (the chief's) with {} worker(s)", global_step_,
                   strategy_.num_workers());
        return std::move(*next);
      } catch (const Error& again) {
        if (!RecoversFrom(again)) throw;
        held.reset();  // what it read ahead may no longer be where the chief is
        failure = std::current_exception();
        Log().warn("Re-forming the training group failed: {}", again.what());
      }
      sync_ = {};
      formed = strategy_.regroup();
    }
  }

  // The logical shards this worker reads in a re-formed group, alike on every worker: those
  // it `held`, with the shards no worker holds (a lost worker's) dealt in ascending order to
  // the worker holding fewest (the lowest rank of those); then, while a worker holds two more
  // than another (a newcomer holds none), its highest shard moves to the one holding fewest.
  std::vector<int> regrouped_shards(const std::vector<int>& held) {
    const int workers = strategy_.num_workers();
    // Every shard's holders (each holder's rank + 1, summed), then how many hold it.
    std::vector<at::Tensor> holdings{at::zeros({2 * logical_shards_}, at::kLong)};
    auto holders = holdings[0].accessor<int64_t, 1>();
    for (int shard : held) {
      holders[shard] = strategy_.worker_index() + 1;
      holders[logical_shards_ + shard] = 1;
    }
    strategy_.sum_across_workers(holdings);
    holders = holdings[0].accessor<int64_t, 1>();
    std::vector<std::vector<int>> shards(static_cast<size_t>(workers));
    std::vector<int> unheld;
    for (int shard = 0; shard < logical_shards_; ++shard) {
      const int64_t count = holders[logical_shards_ + shard];
      EST_ASSERT(count <= 1 && holders[shard] <= workers, "logical shard ", shard, " is held by ", count, " workers");
      if (count == 0)
        unheld.push_back(shard);
      else
        shards[static_cast<size_t>(holders[shard] - 1)].push_back(shard);
    }
    const auto size_order = [](const std::vector<int>& a, const std::vector<int>& b) { return a.size() < b.size(); };
    for (int shard : unheld) std::min_element(shards.begin(), shards.end(), size_order)->push_back(shard);
    while (true) {
      auto fewest = std::min_element(shards.begin(), shards.end(), size_order);
      auto most = std::max_element(shards.begin(), shards.end(), size_order);
      if (most->size() <= fewest->size() + 1) break;
      const auto highest = std::max_element(most->begin(), most->end());
      fewest->push_back(*highest);
      most->erase(highest);
    }
    std::vector<int> mine = std::move(shards[static_cast<size_t>(strategy_.worker_index())]);
    std::sort(mine.begin(), mine.end());
    return mine;
  }

  // After the group re-formed: makes the global step, input position, logical shards and
  // loss scale the chief's.
  void take_chief_counters() {
    std::vector<at::Tensor> counters{
        at::tensor({global_step_, input_position_, int64_t{logical_shards_}, batch_examples_}, at::kLong)};
    if (loss_scaler_)
      counters.push_back(
          at::tensor({loss_scaler_->scale(), static_cast<double>(loss_scaler_->good_steps())}, at::kDouble));
    strategy_.broadcast_from_chief(counters);
    global_step_ = counters[0][0].item<int64_t>();
    input_position_ = counters[0][1].item<int64_t>();
    logical_shards_ = static_cast<int>(counters[0][2].item<int64_t>());
    group_batch_examples_ = counters[0][3].item<int64_t>();
    sync_options_.micro_batches_in_sync = logical_shards_ * accumulation_steps_;
    if (loss_scaler_)
      loss_scaler_->restore(counters[1][0].item<double>(), static_cast<int64_t>(counters[1][1].item<double>()));
  }

  // After the group re-formed: makes replica 0's variables the chief's.
  void take_chief_variables() {
    torch::NoGradGuard no_grad;
    sync_.variables->initialize(replicas_.replica(0).variables());
  }

  // After the group re-formed: makes replica 0's optimizer state the chief's.
  void take_chief_optimizers() {
    for (const auto& [name, optimizer] : replicas_.replica(0).optimizers()) {
      std::string bytes = strategy_.is_chief() ? SerializeOptimizer(*optimizer) : std::string();
      strategy_.broadcast_bytes_from_chief(bytes);
      if (!strategy_.is_chief()) DeserializeOptimizer(bytes, name, *optimizer);
    }
  }

  // The last barrier: every worker returns once the chief's last checkpoint is written. A
  // worker lost meanwhile leaves the others to finish in a group without it. Then newcomers
  // waiting to join learn that the training ended.
  void finish_together() {
    try {
      sync_.step->barrier();
    } catch (const Error& failure) {
      if (!RecoversFrom(failure)) throw;
      Log().warn("The last barrier failed: {}", failure.what());
      sync_ = {};
      if (!strategy_.regroup()) throw;
      strategy_.barrier();
    }
    strategy_.end_group();
  }

  // Loads the latest checkpoint of model_dir into replica 0 (variables and optimizers) and
  // returns its progress; nullopt when there is none. For a VariableStore whose state was lost.
  std::optional<distribute::TrainingProgress> restore_latest_checkpoint() {
    if (checkpoint_writer_) checkpoint_writer_->wait();
    const std::optional<std::string> latest = checkpoint::LatestCheckpoint(estimator_.model_dir);
    if (!latest) return std::nullopt;
    auto reader = std::make_shared<const checkpoint::CheckpointReader>(*latest);
    Log().info("Restoring parameters from {}", *latest);
    ModelContext& ctx = replicas_.replica(0);
    const ModelContext::Initializers restore = RestoreFromCheckpoint(reader, RestoreMode::kTraining);
    restore.variables(ctx.variables());
    for (const auto& [name, optimizer] : ctx.optimizers()) restore.optimizer(name, *optimizer);
    distribute::TrainingProgress progress;
    progress.global_step = reader->global_step();
    for (int worker = 0; worker < strategy_.num_workers(); ++worker) {
      const std::string blob = WorkerInputPositionBlob(worker);
      if (std::optional<std::string> position = reader->blob(blob))
        progress.input_positions[worker] = ParseCountBlob(*position, blob.c_str(), *reader);
    }
    return progress;
  }

  // Resuming, before the input moves past the batches consumed: runs replica 0's model_fn
  // on the input's first batch (which the move passes over anyway), so that its variables
  // are created, and checked against the checkpoint, before a skip that may read the whole
  // input. What the call changed in them (a batch norm's statistics) is put back.
  void create_variables(const data::Element& batch) {
    ModelContext& ctx = replicas_.replica(0);
    initial_values_.emplace();
    const distribute::ReplicaGroup::Alone alone(replicas_.group());
    CallModelFn(estimator_.model_fn, ToDevice(batch, ctx), Mode::kTrain, ctx, global_step_,
                estimator_.config.mixed_precision);
    torch::NoGradGuard no_grad;
    for (auto& [variable, value] : *initial_values_) variable.copy_(value);
    initial_values_.reset();
  }

  // Forward and backward of local replica `r` on each of its micro-batches in `batches`,
  // gradients summed in `.grad` (cleared first). `before_last_backward(spec)` runs after the
  // last forward, when spec's loss and summaries hold their means over the micro-batches.
  // Returns that spec.
  template <typename BeforeLastBackward>
  EstimatorSpec forward_backward(int r, const std::vector<data::Element>& batches,
                                 BeforeLastBackward&& before_last_backward) {
    ModelContext& ctx = replicas_.replica(r);
    const int64_t micro_batches = micro_batches_;
    at::Tensor loss_sum;
    TensorMap summary_sums;
    for (int64_t m = 0; m < micro_batches; ++m) {
      const auto& batch = batches[static_cast<size_t>(m * replicas_.size() + r)];
      EstimatorSpec spec = CallModelFn(estimator_.model_fn, ToDevice(batch, ctx), Mode::kTrain, ctx,
                                       global_step_, estimator_.config.mixed_precision);
      if (m == 0) prepare_optimizers(r, spec);
      const at::Tensor loss = spec.loss;
      if (micro_batches > 1) {
        loss_sum = m == 0 ? loss.detach().clone() : loss_sum.add_(loss.detach());
        for (auto& [tag, value] : spec.summaries) {
          auto [it, inserted] = summary_sums.try_emplace(tag, value.detach().to(at::kFloat));
          if (!inserted) it->second = it->second.add(value.detach().to(at::kFloat));
        }
      }
      if (m + 1 < micro_batches) {
        backward(loss, batch);
        continue;
      }
      if (micro_batches > 1) {
        spec.loss = loss_sum.div_(micro_batches);
        for (auto& [tag, value] : spec.summaries) value = summary_sums.at(tag).div_(micro_batches);
      }
      before_last_backward(spec);
      backward(loss, batch);
      return spec;
    }
    EST_ASSERT(false, "gradient_accumulation_steps must be positive");
  }

  // Before replica `r`'s first backward of a step, for the optimizers of its `spec`: checks
  // that several optimizers share the trainable variables out (when they are new), clears
  // their gradients and sets their learning rates.
  void prepare_optimizers(int r, const EstimatorSpec& spec) {
    ModelContext& ctx = replicas_.replica(r);
    std::vector<torch::optim::Optimizer*>& checked = checked_optimizers_[static_cast<size_t>(r)];
    if (spec.optimizers.size() > 1 && spec.optimizers != checked) {
      CheckOptimizerGroups(spec.optimizers, ctx);
      checked = spec.optimizers;
    }
    for (torch::optim::Optimizer* optimizer : spec.optimizers) clear_gradients(*optimizer, ctx);
    for (const auto& [optimizer, schedule] : spec.learning_rate_schedules) {
      if (optimizer != nullptr) {
        schedules::SetLearningRate(*optimizer, schedule, global_step_);
        continue;
      }
      for (torch::optim::Optimizer* each : spec.optimizers) schedules::SetLearningRate(*each, schedule, global_step_);
    }
  }

  // The learning rates `first`'s schedules set for this step, as summaries of `first`: one
  // optimizer's under "learning_rate/<its name>"; "learning_rate" itself is the rate of a
  // schedule of every optimizer, else of the first one-optimizer schedule model_fn gave.
  void add_learning_rate_summaries(EstimatorSpec& first) {
    for (const auto& [optimizer, schedule] : first.learning_rate_schedules) {
      const at::Tensor rate = at::scalar_tensor(schedule(global_step_), at::kDouble);
      if (optimizer != nullptr)
        first.summaries[std::string(kLearningRateSummary) + "/" + OptimizerName(optimizer, replicas_.replica(0))] =
            rate;
      if (optimizer == nullptr || first.summaries.count(kLearningRateSummary) == 0)
        first.summaries[kLearningRateSummary] = rate;
    }
  }

  // Before a step's first backward: clears the gradients of `optimizer`'s parameters. Those of
  // `ctx`'s trainable variables are left undefined (StepSync::finish counts a missing one as
  // zero and defines it), which saves a pass over them and lets backward hand the first
  // gradient over without adding it to zeros; any other parameter's is zeroed, as zero_grad() does.
  void clear_gradients(torch::optim::Optimizer& optimizer, const ModelContext& ctx) {
    std::unordered_set<const void*> defined_by_sync;
    for (const at::Tensor& variable : ctx.trainable_variables()) defined_by_sync.insert(variable.unsafeGetTensorImpl());
    for (auto& group : optimizer.param_groups()) {
      for (auto& parameter : group.params()) {
        at::Tensor& grad = parameter.mutable_grad();
        if (!grad.defined()) continue;
        if (defined_by_sync.count(parameter.unsafeGetTensorImpl())) {
          grad.reset();
        } else {
          grad.detach_();
          grad.zero_();
        }
      }
    }
  }

  // Backward of `loss` (of model_fn on `batch`), times the loss scale when loss scaling is on.
  void backward(const at::Tensor& loss, const data::Element& batch) {
    RunModelCode("backward of model_fn's loss", Mode::kTrain, global_step_, batch, [&] {
      if (loss_scaler_) {
        loss_scaler_->scale_loss(loss).backward();
      } else {
        loss.backward();
      }
    });
  }

  // With loss scaling: divides every replica's averaged gradients by the scale and updates
  // the scale; false when they are not all finite, and the step must not be applied. Every
  // replica and worker holds the same averaged gradients, so all of them decide alike.
  // Without loss scaling: true.
  bool unscale_gradients() {
    if (!loss_scaler_) return true;
    bool finite = true;
    for (int r = 0; r < replicas_.size(); ++r) {
      const bool replica_finite = loss_scaler_->unscale(replicas_.replica(r).trainable_variables());
      EST_ASSERT(r == 0 || replica_finite == finite, "local replicas hold the same averaged gradients");
      finite = replica_finite;
    }
    const double scale = loss_scaler_->scale();
    loss_scaler_->update(finite);
    if (!finite)
      Log().warn("Gradients of global step {} are not finite at loss scale {}: the update was skipped and the "
                 "loss scale is now {}", global_step_, scale, loss_scaler_->scale());
    return finite;
  }

  // Applies the gradient transform and clipping that model_fn asked for to every local
  // replica's averaged gradients; the global norm before clipping becomes a summary of `first`.
  // A VariableStore that combines several workers' gradients itself clips what it combines.
  void process_gradients(const std::vector<EstimatorSpec>& specs, EstimatorSpec& first,
                         distribute::StepUpdate& update) {
    const bool store_clips = sync_.variables->combines_gradients();
    for (int r = 0; r < replicas_.size(); ++r) {
      const EstimatorSpec& spec = specs[static_cast<size_t>(r)];
      TransformGradients(spec, replicas_.replica(r), global_step_);
      if (store_clips) continue;
      const at::Tensor norm = ClipGradients(spec, replicas_.replica(r));
      if (r == 0 && norm.defined()) add_norm_summaries(first, norm);
    }
    if (!store_clips) return;
    update.clipping = {first.clip_value, first.clip_norm};
    update.clipped_norm = [&first](double norm) {
      add_norm_summaries(first, at::scalar_tensor(norm, at::kDouble));
    };
  }

  // The global norm of the gradients before clipping by `first`'s clip_norm, and after it, as
  // summaries of `first`: where the two differ, the clip acted.
  static void add_norm_summaries(EstimatorSpec& first, const at::Tensor& norm) {
    first.summaries[kGradientNormSummary] = norm;
    first.summaries[kClippedGradientNormSummary] = ClippedGlobalNorm(norm, *first.clip_norm);
  }

  // Forward and backward on every local replica, then the strategy's StepSync makes the
  // gradients every replica applies and agrees the loss, the summaries and the flags; then
  // its VariableStore applies the update. Returns replica 0's spec holding the agreed loss
  // and summaries; sets `stop` to what any worker's `local` flags said.
  EstimatorSpec step(const std::vector<data::Element>& batches, distribute::StepFlags local,
                     distribute::StepFlags& stop) {
    std::vector<EstimatorSpec> specs(static_cast<size_t>(replicas_.size()));
    std::vector<distribute::ReplicaStep> steps(static_cast<size_t>(replicas_.size()));
    // Each replica's optimizer may update the variables whose gradients the StepSync has made
    // final while the others are still being reduced; not with loss scaling or a change to
    // the gradients (clipping), which must see every gradient before any is applied.
    std::deque<OptimizerStepInParts> in_parts;  // a deque: gradients_final holds references
    replicas_.group().run([&](int r) {
      specs[static_cast<size_t>(r)] = forward_backward(r, batches, [&](EstimatorSpec& last) {
        ModelContext& ctx = replicas_.replica(r);
        distribute::ReplicaStep& replica_step = steps[static_cast<size_t>(r)];
        replica_step.variables = ctx.trainable_variables();
        replica_step.buffers = ctx.buffers();
        replica_step.loss = last.loss;
        replica_step.optimizers = last.optimizers;
        if (!loss_scaler_ && !ProcessesGradients(last)) {
          std::vector<OptimizerStepInParts*> parts;
          for (torch::optim::Optimizer* optimizer : last.optimizers)
            parts.push_back(&in_parts.emplace_back(*optimizer, estimator_.config.fused_optimizer_step));
          replica_step.gradients_final = [parts](const std::vector<at::Tensor>& variables) {
            for (OptimizerStepInParts* part : parts) part->part(variables);
          };
        }
        for (const auto& [tag, value] : last.summaries) replica_step.summaries.push_back(value);
        sync_.step->before_last_backward(r, replica_step, local);
      });
    });
    stop = sync_.step->finish(steps, local);
    EstimatorSpec& first = specs.front();
    first.loss = loss_to_host_.start(steps.front().loss);  // travels to the host while the update runs
    size_t index = 0;
    for (auto& [tag, value] : first.summaries) value = steps.front().summaries[index++];
    add_learning_rate_summaries(first);
    distribute::StepUpdate update;
    update.finite = unscale_gradients();
    if (update.finite) process_gradients(specs, first, update);
    update.global_step = global_step_;
    update.input_position = input_position_ + position_per_step_;
    update.step_optimizers = [&] {
      if (!in_parts.empty()) {
        for (OptimizerStepInParts& parts : in_parts) parts.rest();
        return;
      }
      for (auto& spec : specs)
        for (torch::optim::Optimizer* optimizer : spec.optimizers)
          distribute::StepOptimizer(*optimizer, estimator_.config.fused_optimizer_step);
    };
    const int64_t before = global_step_;
    global_step_ = sync_.variables->apply(steps, update, stop);
    if (moving_averages_ && global_step_ > before) moving_averages_->update(global_step_);
    return std::move(first);
  }

  const Estimator::Impl& estimator_;
  distribute::Strategy& strategy_;
  ReplicaSet replicas_;
  /// For each local replica, the several optimizers whose variables were last checked.
  std::vector<std::vector<torch::optim::Optimizer*>> checked_optimizers_;
  /// On the chief with RunConfig::moving_average: the moving averages of replica 0's variables.
  std::optional<MovingAverages> moving_averages_;
  std::optional<DynamicLossScaler> loss_scaler_;
  AsyncHostCopy loss_to_host_;
  distribute::TrainingSync sync_;             ///< the strategy's, made when run() starts and after a regroup
  distribute::StepSyncOptions sync_options_;  ///< what sync_ is made with
  bool complete_saves_;
  std::optional<int64_t> last_saved_step_;
  const int64_t accumulation_steps_;
  std::optional<checkpoint::AsyncCheckpointWriter> checkpoint_writer_;
  int64_t global_step_ = 0;
  int64_t input_position_ = 0;     ///< batches consumed by every pipeline or logical shard read
  int64_t position_per_step_ = 1;  ///< the batches each of them gives a step
  int64_t micro_batches_ = 1;      ///< each local replica's micro-batches a step
  int logical_shards_ = 0;         ///< the logical input shards, 0 where each worker reads one pipeline
  int64_t batch_examples_ = 0;  ///< examples per batch of this run (the first batch's), 0 before it
  int64_t group_batch_examples_ = 0;  ///< the chief's, when the group last re-formed (0: not known)
  /// While create_variables() runs: the variables it creates that no optimizer steps, each
  /// with a copy of its value before model_fn used it.
  std::optional<std::vector<std::pair<at::Tensor, at::Tensor>>> initial_values_;
  at::Tensor last_loss_;
  int stopped_by_signal_ = 0;
};

}  // namespace

void Estimator::Impl::train(const InputFn& input_fn, const TrainOptions& options) {
  EST_CHECK(!(options.steps() && options.max_steps()), ConfigError,
            "Estimator::train: set at most one of steps and max_steps");
  EST_CHECK(options.steps().value_or(1) > 0, ConfigError, "Estimator::train: steps must be positive, got ",
            *options.steps());
  EST_CHECK(options.max_steps().value_or(1) > 0, ConfigError, "Estimator::train: max_steps must be positive, got ",
            *options.max_steps());

  distribute::Strategy& strategy = *train_strategy();
  CheckStrategyFitsCluster(config, strategy);
  // The chief owns model_dir while it trains: a second job writing into it is refused here,
  // before anything is read or written.
  std::optional<ModelDirLock> model_dir_lock;
  if (strategy.is_chief()) {
    CreateDirectories(model_dir);
    model_dir_lock.emplace(model_dir);
    RemoveTrainingEnd(model_dir);  // this training's end is not the last one's
  }
  std::shared_ptr<const checkpoint::CheckpointReader> resume_from = open_checkpoint("");
  const int64_t start_step = resume_from ? resume_from->global_step() : 0;
  if (options.max_steps() && start_step >= *options.max_steps()) {
    Log().info("Skipping training since max_steps has already saved.");
    return;
  }
  ModelContext::Initializers restore;
  if (resume_from) {
    Log().info("Restoring parameters from {}", resume_from->prefix());
    restore = RestoreFromCheckpoint(resume_from, RestoreMode::kTraining);
  } else if (!warm_start_from.ckpt_to_initialize_from().empty()) {
    std::shared_ptr<const checkpoint::CheckpointReader> source =
        open_checkpoint(warm_start_from.ckpt_to_initialize_from());
    EST_CHECK(source != nullptr, CheckpointError, "warm_start_from: no checkpoint at '",
              warm_start_from.ckpt_to_initialize_from(), "'");
    Log().info("Warm-starting from {}", source->prefix());
    restore = WarmStartFromCheckpoint(source, warm_start_from);
  }
  int64_t skip_batches = 0;
  std::optional<int64_t> saved_batch_examples;
  if (resume_from && !input_position_restored) {
    // A worker's own position where the checkpoint has one (parameter servers: each worker
    // reads its own shard at its own pace), else the chief's, which every worker shares.
    std::optional<std::string> position = resume_from->blob(WorkerInputPositionBlob(strategy.worker_index()));
    if (!position) position = resume_from->blob(kInputPositionBlob);
    if (position) {
      skip_batches = ParseCountBlob(*position, kInputPositionBlob, *resume_from);
    }
    if (auto examples = resume_from->blob(kInputBatchExamplesBlob)) {
      saved_batch_examples = ParseCountBlob(*examples, kInputBatchExamplesBlob, *resume_from);
    }
  }
  input_position_restored = true;

  if (config.tf_random_seed) torch::manual_seed(*config.tf_random_seed);
  std::optional<StopSignalGuard> stop_signals;
  if (config.stop_on_signals) stop_signals.emplace();
  const distribute::FlightRecorderSignal flight_recorder_dump(config.flight_recorder_signal);
  // With in-job recovery, a worker started while the group trains joins it at the end of a
  // step and takes the chief's state then.
  const distribute::Strategy::GroupEntry entry = strategy.enter_group();
  if (entry == distribute::Strategy::GroupEntry::kTrainingEnded) {
    Log().info("The training group's training ended before this worker joined it: nothing to train");
    return;
  }
  const bool joins_running_group = entry == distribute::Strategy::GroupEntry::kJoinedRunning;
  if (!joins_running_group) CheckSameGlobalStep(strategy, start_step, "restored");
  if (strategy.num_replicas_in_sync() > 1)
    Log().info("Training with {}: {} replicas in sync, {} on this worker", strategy.name(),
               strategy.num_replicas_in_sync(), strategy.num_local_replicas());
  TrainingSession session(*this, strategy, std::move(restore), resume_from,
                          /*complete_saves=*/!options.saving_listeners().empty());
  std::vector<HookPtr> hooks = options.hooks();
  for (auto& hook : DefaultTrainingHooks(config, model_dir, options, session.is_chief())) hooks.push_back(hook);
  const std::optional<int64_t> last_step =
      options.max_steps() ? options.max_steps()
                          : options.steps() ? std::optional<int64_t>(start_step + *options.steps()) : std::nullopt;
  session.run(input_fn, std::move(hooks), start_step, last_step, skip_batches, saved_batch_examples,
              LogicalInputShards(config, strategy, resume_from.get()), joins_running_group);
  if (session.last_loss().defined())
    Log().info("Loss for final step: {}.", FormatTensorValue(session.last_loss()));
  const int signal_number = session.stopped_by_signal();
  // An evaluator task following the checkpoints learns that none comes after this one.
  const std::optional<int64_t> last_checkpoint_step =
      session.last_saved_step() ? session.last_saved_step()
                                : resume_from ? std::optional<int64_t>(start_step) : std::nullopt;
  if (session.is_chief() && signal_number == 0 && last_checkpoint_step)
    WriteTrainingEnd(model_dir, {*last_checkpoint_step, TrainingEndJob(config.cluster)});
  if (signal_number != 0)
    throw Interrupted(detail::Concat("training stopped by ", StopSignalName(signal_number), " at global step ",
                                     session.global_step(), "; ", session.is_chief() ? "saved" : "the chief saved",
                                     " a checkpoint in ", model_dir),
                      signal_number);
}

}  // namespace est
