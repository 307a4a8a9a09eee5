// The training loop of Estimator::train: a MonitoredTrainingSession in eager form.

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <exception>
#include <functional>
#include <optional>

#include "checkpoint/checkpoint_reader.h"
#include "common/crash_point.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "distribute/elastic/elastic_group.h"
#include "distribute/flight_recorder_signal.h"
#include "distribute/replica_group.h"
#include "distribute/step_sync.h"
#include "distribute/strategy.h"
#include "estimator/batch_signature.h"
#include "estimator/device_prefetcher.h"
#include "estimator/estimator_impl.h"
#include "estimator/hooks/hook_runner.h"
#include "estimator/hooks/logging_tensor_hook.h"
#include "estimator/loss_scaler.h"
#include "estimator/model_checkpoint.h"
#include "estimator/model_code_error.h"
#include "estimator/model_dir_lock.h"
#include "estimator/moving_averages.h"
#include "estimator/replica_set.h"
#include "estimator/step_input.h"
#include "estimator/training_checkpoints.h"
#include "estimator/training_setup.h"
#include "estimator/training_step.h"
#include "estimator/training_end.h"

namespace est {
namespace {

// Appends to `kept` each of `variables` that autograd does not train (buffers), with a copy
// of its value.
void KeepInitialValues(const NamedTensors& variables, std::vector<std::pair<at::Tensor, at::Tensor>>& kept) {
  for (const auto& [name, variable] : variables)
    if (!variable.requires_grad()) kept.emplace_back(variable, variable.detach().clone());
}

// Logs why the training stopped at `global_step`: the flags every worker agreed (`stop`), the
// stop signal this process received (0: none, another worker's), and whether a hook of this
// worker asked to stop; `start_step` and `last_step` as TrainingSession::run's.
void LogWhyTrainingStopped(const distribute::StepFlags& stop, int local_signal, bool hook_requested_stop,
                           int64_t global_step, int64_t start_step, std::optional<int64_t> last_step) {
  if (stop.stop_signal) {
    Log().warn("Stopping at global step {}: {}", global_step,
               local_signal != 0 ? std::string("received ") + StopSignalName(local_signal)
                                 : std::string("another worker received a stop signal"));
  } else if (stop.input_ended && last_step && global_step < *last_step) {
    Log().warn("The input ended at global step {}, before the {} steps asked for (max_steps {}): training stopped "
               "early. To train until max_steps, repeat the training dataset in input_fn (Dataset::repeat())",
               global_step, *last_step - start_step, *last_step);
  } else if (stop.input_ended) {
    Log().info("Input exhausted at global step {}: stopping training", global_step);
  } else if (stop.job_finished) {
    Log().info("The chief finished the job's training at global step {}: stopping", global_step);
  } else if (stop.stop_requested) {
    Log().info("Stopping at global step {}: {}", global_step,
               hook_requested_stop ? "a hook requested it" : "a hook of another worker requested it");
  }
}

// After an elastic group re-formed: makes the state of `replica`'s optimizers the chief's.
void TakeChiefOptimizers(distribute::ElasticGroup& group, ModelContext& replica, bool is_chief) {
  const auto& optimizers = replica.optimizers();
  std::vector<std::string> states;
  for (const auto& [name, optimizer] : optimizers) states.push_back(is_chief ? SerializeOptimizer(*optimizer) : "");
  group.take_chief_blobs(states);
  if (is_chief) return;
  auto state = states.begin();
  for (const auto& [name, optimizer] : optimizers) DeserializeOptimizer(*state++, name, *optimizer);
}

// One training run: owns the replicas' state, the input iterator and the hooks. The chief's
// checkpoints are written in the background (TrainingCheckpoints); run() waits for the last
// save, so every checkpoint is complete when train() returns.
class TrainingSession : public Session {
  using Change = distribute::ElasticGroup::Change;

 public:
  // `restore` fills new state (from the checkpoint resumed, or warm-starting); `resume_from`
  // is the checkpoint the run continues, null when it starts afresh or warm-starts.
  TrainingSession(const Estimator::Impl& estimator, distribute::Strategy& strategy,
                  ModelContext::Initializers restore, std::shared_ptr<const checkpoint::CheckpointReader> resume_from,
                  bool complete_saves)
      : estimator_(estimator),
        strategy_(strategy),
        elastic_(strategy.elastic()),
        // Replica 0's new variables become the training's current values through the
        // strategy's VariableStore, which run() makes before model_fn first runs.
        replicas_(strategy, estimator.params, std::move(restore),
                  [this](const NamedTensors& variables) {
                    sync_.variables->initialize(variables);
                    if (moving_averages_) moving_averages_->track(variables);
                    if (initial_values_) KeepInitialValues(variables, *initial_values_);
                  },
                  estimator.config.channels_last, &estimator.config.cluster),
        step_(estimator, replicas_),
        loss_scaler_(step_.loss_scaler()),
        accumulation_steps_(estimator.config.gradient_accumulation_steps) {
    if (loss_scaler_ && resume_from) RestoreLossScale(*resume_from, *loss_scaler_);
    if (strategy.is_chief() && estimator.config.moving_average)
      moving_averages_.emplace(*estimator.config.moving_average, resume_from);
    if (strategy.is_chief()) checkpoints_.emplace(estimator, complete_saves);
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
  std::optional<int64_t> last_saved_step() const {
    return checkpoints_ ? checkpoints_->last_saved_step() : std::nullopt;
  }

  std::string save_checkpoint() override {
    EST_CHECK(checkpoints_.has_value(), ConfigError, "only the chief saves checkpoints; worker ",
              strategy_.worker_index(), " asked to");
    // Where the training's state is not replica 0's own (parameter servers), the
    // VariableStore brings it here first, with the progress it belongs to.
    const std::optional<distribute::TrainingProgress> progress =
        sync_.variables ? sync_.variables->before_save() : std::nullopt;
    SavedProgress saved;
    saved.global_step = progress ? progress->global_step : global_step_;
    saved.input_position = input_position_;
    if (progress) saved.worker_input_positions = progress->input_positions;
    saved.batch_examples = batch_examples_;
    saved.logical_shards = logical_shards_;
    saved.loss_scaler = loss_scaler_ ? &*loss_scaler_ : nullptr;
    return checkpoints_->save(replicas_.replica(0), moving_averages_ ? &*moving_averages_ : nullptr, saved);
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
    EST_CHECK(logical_shards > 0 || elastic_ == nullptr, ConfigError, strategy_.name(),
              ": in-job recovery (min_workers) needs workers of one replica each, which read logical input shards; "
              "this worker has ",
              replicas_.size(), " replicas");
    // Every worker of the group, as large as it may grow, reads one shard or more.
    if (logical_shards > 0) CheckLogicalShardsCover(logical_shards, MaxWorkers(strategy_));
    if (logical_shards > 0) sync_options_.micro_batches_in_sync = logical_shards * accumulation_steps_;
    sync_options_.fused_optimizer_step = estimator_.config.fused_optimizer_step;
    if (checkpoints_)
      sync_options_.restore_latest_checkpoint = [this] {
        return checkpoints_->restore_latest(replicas_.replica(0), strategy_.num_workers());
      };
    // A step's batches: micro-batch m of local replica r at index m * replicas + r. The next
    // step's batches are read before this step synchronizes, and whether every worker got
    // them travels in this step's all-reduce, so a step synchronizes once.
    std::vector<data::Element> current;
    std::vector<data::Element> upcoming;
    distribute::StepFlags stop;
    StepInput input = joins_running_group
                          ? reform_group(input_fn, std::nullopt, {}, current, stop, Change::kJoined)
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
      local.newcomer_waiting = elastic_ != nullptr && elastic_->newcomer_waiting();
      prefetcher.start(upcoming);  // copied onto the devices while this step computes
      EstimatorSpec spec;
      try {
        const int64_t before = global_step_;
        spec = step_.run(current, {global_step_, micro_batches_, input_position_ + position_per_step_}, sync_, local,
                         stop, global_step_);
        if (moving_averages_ && global_step_ > before) moving_averages_->update(global_step_);
      } catch (const Error& failure) {
        if (!RecoversFrom(failure)) throw;
        Log().warn("The step after global step {} failed: {}", global_step_, failure.what());
        prefetcher.wait(upcoming);
        // What it read ahead, the failed step's batches then the next step's, is where the
        // input goes on if the chief's position is this worker's.
        std::vector<const std::vector<data::Element>*> read_ahead;
        if (!local.input_ended) read_ahead = {&current, &upcoming};
        input = reform_group(input_fn, std::move(input), read_ahead, current, stop, Change::kLostWorker);
        upcoming.assign(current.size(), {});
        prefetcher.start(current);
        continue;
      }
      input_position_ += position_per_step_;
      last_loss_ = spec.loss;
      CrashPoint("after_step", global_step_);
      if (checkpoints_) checkpoints_->check();
      step_.wait_for_loss();
      const bool requested = runner.after_step({spec.loss, global_step_ - 1, global_step_, &spec.summaries,
                                                &spec.predictions});
      if (requested && (strategy_.num_workers() == 1 || (last_step && global_step_ >= *last_step))) break;
      hook_requested_stop = hook_requested_stop || requested;
      std::swap(current, upcoming);
      if (stop.newcomer_waiting && !stop.input_ended && !stop.stop_signal && !stop.stop_requested &&
          !hook_requested_stop) {
        prefetcher.wait(current);
        input = reform_group(input_fn, std::move(input), {&current}, current, stop, Change::kNewcomers);
        upcoming.assign(current.size(), {});
        prefetcher.start(current);
      }
    }
    const int local_signal = stop.stop_signal ? StopSignalGuard::pending() : 0;
    if (stop.stop_signal) stopped_by_signal_ = local_signal != 0 ? local_signal : SIGTERM;
    LogWhyTrainingStopped(stop, local_signal, hook_requested_stop, global_step_, start_step, last_step);
    runner.end();
    if (checkpoints_) checkpoints_->wait();
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
      return reform_group(input_fn, std::nullopt, {}, current, stop, Change::kLostWorker);
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
    if (skip_batches > 0) WarnIfBatchesChanged(start_step, skip_batches, batch_examples_, saved_batch_examples);
    return input;
  }

  // The step's shape: `batches_per_step` batches over this worker's replicas (each replica's
  // micro-batches), a step moving the input position by `position_per_step`.
  void shape_steps(int64_t batches_per_step, int64_t position_per_step) {
    position_per_step_ = position_per_step;
    micro_batches_ = batches_per_step / replicas_.size();
    sync_options_.micro_batches = micro_batches_;
  }

  // Whether the training goes on after `failure`, a step's: the elastic group re-forms
  // without a lost or silent peer.
  bool RecoversFrom(const Error& failure) const { return elastic_ != nullptr && elastic_->recovers_from(failure); }

  // Re-forms the training group for `change` (ElasticGroup::reform) and this worker's input
  // in it. Then every worker takes the chief's counters, variables, optimizer state and loss
  // scale (a newcomer creates its variables first, on its first batch), and the logical
  // shards are dealt again: a worker keeps the iterators of those it `held` and still reads,
  // and gives first what it read ahead of them (`read_ahead`: whole steps, read from its
  // position) where the chief's position is the one it read from; any other shard is opened
  // at the chief's position; a worker the group took back as a newcomer (it went on without
  // it while it was stopped) holds none. Nothing of a failed step counts unless the chief
  // applied it.
  // Returns the input, with the next step's batches in `current` and `stop` saying whether
  // it ended.
  StepInput reform_group(const InputFn& input_fn, std::optional<StepInput> held,
                         const std::vector<const std::vector<data::Element>*>& read_ahead,
                         std::vector<data::Element>& current, distribute::StepFlags& stop, Change change) {
    const int64_t read_from = input_position_;
    std::optional<StepInput> reformed;
    elastic_->reform(
        change, [this] { sync_ = {}; },  // its StepSync reduces over the collective the new group replaces
        [&] {
          try {
            reformed = rejoin_input(input_fn, held, read_ahead, read_from, current, stop);
          } catch (const Error&) {
            held.reset();  // what it read ahead may no longer be where the chief is
            throw;
          }
        });
    return std::move(*reformed);
  }

  // reform_group's attempt in the group formed: this worker's input in it.
  StepInput rejoin_input(const InputFn& input_fn, std::optional<StepInput>& held,
                         const std::vector<const std::vector<data::Element>*>& read_ahead, int64_t read_from,
                         std::vector<data::Element>& current, distribute::StepFlags& stop) {
    // The group went on without this worker while it was stopped: others read its shards.
    if (held && elastic_->rejoined_as_newcomer()) held.reset();
    take_chief_counters();
    const std::vector<int> shards = elastic_->deal_shards(logical_shards_, held ? held->shards() : std::vector<int>{});
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
    TakeChiefOptimizers(*elastic_, replicas_.replica(0), strategy_.is_chief());
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
  }

  // After the group re-formed: makes the global step, input position, logical shards and
  // loss scale the chief's.
  void take_chief_counters() {
    std::vector<int64_t> counters{global_step_, input_position_, logical_shards_, batch_examples_,
                                  loss_scaler_ ? loss_scaler_->good_steps() : 0};
    std::vector<double> scale;
    if (loss_scaler_) scale.push_back(loss_scaler_->scale());
    elastic_->take_chief_counters(counters, scale);
    global_step_ = counters[0];
    input_position_ = counters[1];
    logical_shards_ = static_cast<int>(counters[2]);
    group_batch_examples_ = counters[3];
    sync_options_.micro_batches_in_sync = logical_shards_ * accumulation_steps_;
    if (loss_scaler_) loss_scaler_->restore(scale[0], counters[4]);
  }

  // After the group re-formed: makes replica 0's variables the chief's.
  void take_chief_variables() {
    torch::NoGradGuard no_grad;
    sync_.variables->initialize(replicas_.replica(0).variables());
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
      elastic_->reform(Change::kLostWorker, [this] { sync_ = {}; }, [this] { elastic_->barrier(); });
    }
    if (elastic_ != nullptr) elastic_->end();
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

  const Estimator::Impl& estimator_;
  distribute::Strategy& strategy_;
  distribute::ElasticGroup* const elastic_;  ///< the strategy's, with in-job recovery; else null
  ReplicaSet replicas_;
  TrainingStep step_;
  std::optional<DynamicLossScaler>& loss_scaler_;  ///< step_'s
  /// On the chief with RunConfig::moving_average: the moving averages of replica 0's variables.
  std::optional<MovingAverages> moving_averages_;
  distribute::TrainingSync sync_;             ///< the strategy's, made when run() starts and when the group re-forms
  distribute::StepSyncOptions sync_options_;  ///< what sync_ is made with
  const int64_t accumulation_steps_;
  std::optional<TrainingCheckpoints> checkpoints_;  ///< the chief's
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
  using Entry = distribute::ElasticGroup::Entry;
  const Entry entry = strategy.elastic() ? strategy.elastic()->enter() : Entry::kAtStart;
  if (entry == Entry::kTrainingEnded) {
    Log().info("The training group's training ended before this worker joined it: nothing to train");
    return;
  }
  const bool joins_running_group = entry == Entry::kJoinedRunning;
  if (!joins_running_group) CheckSameGlobalStep(strategy, start_step, "restored");
  if (strategy.num_replicas_in_sync() > 1)
    Log().info("Training with {}: {} replicas in sync, {} on this worker", strategy.name(),
               strategy.num_replicas_in_sync(), strategy.num_local_replicas());
  TrainingSession session(*this, strategy, std::move(restore), resume_from,
                          /*complete_saves=*/!options.saving_listeners().empty());
  std::vector<HookPtr> hooks = options.hooks();
  for (auto& hook : DefaultTrainingHooks(config, model_dir, options, session.is_chief())) hooks.push_back(hook);
  std::optional<int64_t> last_step = options.max_steps();
  if (!last_step && options.steps()) last_step = start_step + *options.steps();
  session.run(input_fn, std::move(hooks), start_step, last_step, skip_batches, saved_batch_examples,
              LogicalInputShards(config, strategy, resume_from.get()), joins_running_group);
  if (session.last_loss().defined())
    Log().info("Loss for final step: {}.", FormatTensorValue(session.last_loss()));
  const int signal_number = session.stopped_by_signal();
  // An evaluator task following the checkpoints learns that none comes after this one.
  std::optional<int64_t> last_checkpoint_step = session.last_saved_step();
  if (!last_checkpoint_step && resume_from) last_checkpoint_step = start_step;
  if (session.is_chief() && signal_number == 0 && last_checkpoint_step)
    WriteTrainingEnd(model_dir, {*last_checkpoint_step, TrainingEndJob(config.cluster)});
  if (signal_number != 0)
    throw Interrupted(Concat("training stopped by ", StopSignalName(signal_number), " at global step ",
                             session.global_step(), "; ", session.is_chief() ? "saved" : "the chief saved",
                             " a checkpoint in ", model_dir),
                      signal_number);
}

}  // namespace est
