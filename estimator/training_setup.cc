// What a training run starts from: its hooks, its input's logical shards.

#include "estimator/training_setup.h"

#include "common/error.h"
#include "common/logging.h"
#include "distribute/elastic/elastic_group.h"
#include "estimator/hooks/checkpoint_saver_hook.h"
#include "estimator/hooks/logging_tensor_hook.h"
#include "estimator/hooks/nan_tensor_hook.h"
#include "estimator/hooks/step_counter_hook.h"
#include "estimator/hooks/stop_at_step_hook.h"
#include "estimator/hooks/summary_saver_hook.h"
#include "estimator/model_checkpoint.h"
#include "estimator/training_checkpoints.h"

namespace est {
namespace {

// Whether `strategy`'s workers can read logical input shards: one replica each, all stepping
// together (not the workers of parameter servers, which read at their own pace).
bool ReadsLogicalShards(const distribute::Strategy& strategy) {
  return strategy.num_local_replicas() == 1 && strategy.model_collective_workers() == strategy.num_workers();
}

}  // namespace

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

void WarnIfBatchesChanged(int64_t start_step, int64_t skip_batches, int64_t batch_examples,
                          std::optional<int64_t> saved_batch_examples) {
  if (!saved_batch_examples || *saved_batch_examples == batch_examples) return;
  Log().warn(
      "Resuming at global step {} with batches of {} examples, but the checkpoint was written with batches of {}: "
      "the input position is counted in batches, so the {} batches skipped are {:.0f} examples of this input where "
      "the first run consumed {:.0f}",
      start_step, batch_examples, *saved_batch_examples, skip_batches,
      static_cast<double>(skip_batches) * static_cast<double>(batch_examples),
      static_cast<double>(skip_batches) * static_cast<double>(*saved_batch_examples));
}

// The most workers `strategy`'s training group may hold: more than it starts with where
// workers started later may join it (ElasticGroup::max_workers).
int MaxWorkers(distribute::Strategy& strategy) {
  return strategy.elastic() ? strategy.elastic()->max_workers() : strategy.num_workers();
}

// The logical input shards the training reads: RunConfig::logical_input_shards, else the
// checkpoint's, else one per worker of the largest group (MaxWorkers); 0 where each worker
// reads one pipeline of its own.
int LogicalInputShards(const RunConfig& config, distribute::Strategy& strategy,
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
  return saved ? static_cast<int>(*saved) : MaxWorkers(strategy);
}


}  // namespace est
