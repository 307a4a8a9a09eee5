#include "estimator/step_input.h"

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace est {

StepInput::StepInput(int shard_count, std::vector<int> shards, int64_t rounds)
    : shard_count_(shard_count), shards_(std::move(shards)), rounds_(rounds) {}

StepInput StepInput::Pipeline(InputFn input_fn, const distribute::InputContext& context, int64_t batches_per_step) {
  EST_ASSERT(batches_per_step >= 1, "a step reads at least one batch");
  StepInput input(0, {}, batches_per_step);
  input.datasets_.push_back(input_fn(Mode::kTrain, context));
  input.iterators_.push_back(input.datasets_.back().make_iterator());
  input.read_ahead_.resize(1);
  return input;
}

StepInput StepInput::LogicalShards(InputFn input_fn, int count, std::vector<int> shards, int64_t rounds) {
  EST_ASSERT(rounds >= 1 && !shards.empty(), "a step reads at least one batch");
  StepInput input(count, std::move(shards), rounds);
  for (int shard : input.shards_) {
    EST_ASSERT(shard >= 0 && shard < count, "logical shard ", shard, " of ", count);
    input.datasets_.push_back(input_fn(Mode::kTrain, distribute::InputContext(count, shard, count)));
    input.iterators_.push_back(input.datasets_.back().make_iterator());
  }
  input.read_ahead_.resize(input.shards_.size());
  return input;
}

std::pair<StepInput, int64_t> StepInput::Regroup(const InputFn& input_fn, std::vector<int> shards, int64_t position,
                                                 const std::vector<const std::vector<data::Element>*>& read_ahead) && {
  EST_ASSERT(logical_shards() && !shards.empty(), "only logical shards regroup");
  const size_t held = shards_.size();
  for (const std::vector<data::Element>* step : read_ahead) {
    EST_ASSERT(step->size() == batches_per_step(), "a step's batches");
    for (size_t i = 0; i < step->size(); ++i) read_ahead_[i % held].push_back((*step)[i]);
  }
  StepInput input(shard_count_, std::move(shards), rounds_);
  int64_t reached = position;
  for (int shard : input.shards_) {
    EST_ASSERT(shard >= 0 && shard < shard_count_, "logical shard ", shard, " of ", shard_count_);
    const auto kept = std::find(shards_.begin(), shards_.end(), shard);
    if (kept != shards_.end()) {
      const auto k = static_cast<size_t>(kept - shards_.begin());
      input.datasets_.push_back(std::move(datasets_[k]));
      input.iterators_.push_back(std::move(iterators_[k]));
      input.read_ahead_.push_back(std::move(read_ahead_[k]));
      continue;
    }
    input.datasets_.push_back(input_fn(Mode::kTrain, distribute::InputContext(shard_count_, shard, shard_count_)));
    input.iterators_.push_back(input.datasets_.back().make_iterator());
    input.read_ahead_.emplace_back();
    if (position > 0) reached = std::min(reached, input.iterators_.back()->skip(position));
  }
  return {std::move(input), reached};
}

size_t StepInput::batches_per_step() const { return static_cast<size_t>(rounds_) * iterators_.size(); }

int64_t StepInput::position_per_step() const { return rounds_; }

bool StepInput::read(std::vector<data::Element>& batches, int64_t step) {
  EST_ASSERT(batches.size() == batches_per_step(), "a step's batches");
  const size_t pipelines = iterators_.size();
  for (size_t i = 0; i < batches.size(); ++i) {
    std::deque<data::Element>& ahead = read_ahead_[i % pipelines];
    if (!ahead.empty()) {
      batches[i] = std::move(ahead.front());
      ahead.pop_front();
      continue;
    }
    std::optional<data::Element> next = NextInput(*iterators_[i % pipelines], Mode::kTrain, step);
    if (!next) return false;
    batches[i] = std::move(*next);
  }
  return true;
}

int64_t StepInput::skip_to(int64_t position, int64_t step,
                           const std::function<void(const data::Element&)>& first_batch) {
  if (position <= 0) return 0;
  std::optional<data::Element> first = NextInput(*iterators_.front(), Mode::kTrain, step);
  if (!first) return 0;
  first_batch(*first);
  const int64_t reached = 1 + iterators_.front()->skip(position - 1);
  for (size_t i = 1; i < iterators_.size(); ++i) iterators_[i]->skip(position);
  return reached;
}

void CheckLogicalShardsCover(int count, int workers) {
  EST_CHECK(count >= workers, ConfigError, "the training input is read as ", count, " logical shard",
            count == 1 ? "" : "s", ", fewer than the ", workers,
            " workers that step together or that the group may grow to (max_workers): each worker needs one to read "
            "(set RunConfig::logical_input_shards, est-train --logical-input-shards, to at least ",
            workers, ")");
}

std::vector<int> LogicalShardsOfWorker(int count, int workers, int worker) {
  CheckLogicalShardsCover(count, workers);
  EST_ASSERT(worker >= 0 && worker < workers, "worker ", worker, " of ", workers);
  std::vector<int> shards;
  for (int shard = worker; shard < count; shard += workers) shards.push_back(shard);
  return shards;
}

}  // namespace est
