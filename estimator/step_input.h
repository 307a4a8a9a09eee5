#pragma once
/// StepInput: the batches a worker reads for its training steps, from one input pipeline of
/// its own or from the logical input shards it holds.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "estimator/input_fn.h"

namespace est {

/// The training input of one worker. Either one pipeline (input_fn called once with the
/// worker's InputContext), or logical shards: the input read as a fixed number L of shards,
/// input_fn called for each shard s this worker holds with InputContext(L, s, L), so that a
/// step's global batch is one batch of every shard whichever worker reads it.
class StepInput {
 public:
  /// One pipeline for `context`, `batches_per_step` batches a step.
  static StepInput Pipeline(InputFn input_fn, const distribute::InputContext& context, int64_t batches_per_step);
  /// Logical shards `shards` (ascending, each in [0, count)) of `count`; a step reads
  /// `rounds` rounds, one batch of each shard in a round.
  static StepInput LogicalShards(InputFn input_fn, int count, std::vector<int> shards, int64_t rounds);

  /// After the training group changed: logical shards `shards` (ascending) of this input's
  /// count, which consumes this one. A shard it held keeps its iterator, and the batches it
  /// read ahead come first: `read_ahead`, whole steps of this input's batches in read()
  /// order, read from `position`; any other shard is opened with `input_fn` and moved past
  /// its first `position` batches. Returns it with the position reached (less than `position`
  /// where a new shard ended first).
  std::pair<StepInput, int64_t> Regroup(const InputFn& input_fn, std::vector<int> shards, int64_t position,
                                        const std::vector<const std::vector<data::Element>*>& read_ahead) &&;

  /// Batches of one step: batch k of round m at m * (shards held, or 1) + k.
  size_t batches_per_step() const;
  /// How far a step moves the position: the batches each pipeline or shard gives a step.
  int64_t position_per_step() const;
  /// Whether this input reads logical shards.
  bool logical_shards() const { return shard_count_ > 0; }
  /// The shards held (the pipeline: none).
  const std::vector<int>& shards() const { return shards_; }

  /// Fills `batches` (batches_per_step() of them) with the next step's batches; false when
  /// the input ends first. `step` names the step in errors.
  bool read(std::vector<data::Element>& batches, int64_t step);
  /// Moves each pipeline or shard past its first `position` batches, as reads would; the
  /// first one's first batch is read and handed to `first_batch` first (model_fn creates the
  /// variables on it, checked against the checkpoint, before a skip that may read the whole
  /// input). Returns the position reached: less than `position` where the input ended.
  int64_t skip_to(int64_t position, int64_t step, const std::function<void(const data::Element&)>& first_batch);

 private:
  StepInput(int shard_count, std::vector<int> shards, int64_t rounds);

  int shard_count_ = 0;      ///< L, or 0 for one pipeline
  std::vector<int> shards_;  ///< the shards held, empty for one pipeline
  int64_t rounds_ = 1;       ///< batches each pipeline or shard gives a step
  std::vector<std::unique_ptr<data::Iterator>> iterators_;
  std::vector<data::Dataset> datasets_;  ///< kept alive while their iterators read
  /// By pipeline or shard: batches read ahead (Regroup), which read() gives first.
  std::vector<std::deque<data::Element>> read_ahead_;
};

/// ConfigError when `count` logical shards are fewer than `workers` (those that step
/// together, or that the group may grow to): a worker would read nothing.
void CheckLogicalShardsCover(int count, int workers);

/// The logical shards of `count` that worker `worker` of `workers` reads: worker, worker +
/// workers, … (CheckLogicalShardsCover first).
std::vector<int> LogicalShardsOfWorker(int count, int workers, int worker);

}  // namespace est
