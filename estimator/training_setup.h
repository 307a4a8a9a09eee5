#pragma once
/// What a training run starts from: the hooks every run adds, and how its input is read in
/// logical shards. Internal to the estimator.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "estimator/estimator_impl.h"

namespace est {

namespace checkpoint {
class CheckpointReader;
}  // namespace checkpoint

/// The hooks TensorFlow's Estimator adds to every training run, after the user's.
std::vector<HookPtr> DefaultTrainingHooks(const RunConfig& config, const std::string& model_dir,
                                          const TrainOptions& options, bool is_chief);

/// The examples in a batch: the leading dimension of its first feature (or its labels).
int64_t BatchExamples(const data::Element& batch);

/// Where a run resumes at `start_step` past `skip_batches` batches of `batch_examples`
/// examples, but the checkpoint's run batched `saved_batch_examples` (when it recorded them):
/// warns that the input position, counted in batches, is not where the examples stopped.
void WarnIfBatchesChanged(int64_t start_step, int64_t skip_batches, int64_t batch_examples,
                          std::optional<int64_t> saved_batch_examples);

/// The most workers `strategy`'s training group may hold: more than it starts with where
/// workers started later may join it (ElasticGroup::max_workers).
int MaxWorkers(distribute::Strategy& strategy);

/// The logical input shards the training reads: RunConfig::logical_input_shards, else the
/// checkpoint's (`resume_from`, may be null), else one per worker of the largest group
/// (MaxWorkers); 0 where each worker reads one pipeline of its own.
int LogicalInputShards(const RunConfig& config, distribute::Strategy& strategy,
                       const checkpoint::CheckpointReader* resume_from);

}  // namespace est
