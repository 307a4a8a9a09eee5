#pragma once
/// TrainingEnd: the chief's record in model_dir that its training ended, and at which global
/// step, so that an evaluator task following the checkpoints evaluates and exports the last one
/// and exits, rather than wait for a checkpoint at max_steps that never comes (a hook stopped
/// the training early, or its input ended).

#include <cstdint>
#include <optional>
#include <string>

namespace est {
namespace distribute {
struct ClusterConfig;
}

/// The record's name in model_dir.
inline constexpr char kTrainingEndName[] = "training_end.json";

/// How a job's training ended.
struct TrainingEnd {
  /// The global step of the last checkpoint the chief saved.
  int64_t global_step = 0;
  /// The job that trained: the job id every task of it derives alike (EST_JOB_ID, else the
  /// chief's address), so that an evaluator of a later job of the same model_dir does not take
  /// an earlier job's end for its own.
  std::string job;
};

/// The job whose training `cluster` places this task in, as TrainingEnd::job names it.
std::string TrainingEndJob(const distribute::ClusterConfig& cluster);

/// Writes the record atomically into `model_dir` (the chief, after its last checkpoint).
void WriteTrainingEnd(const std::string& model_dir, const TrainingEnd& end);

/// Removes the record, if any (the chief, before it trains again).
void RemoveTrainingEnd(const std::string& model_dir);

/// The record in `model_dir`, or nullopt when there is none. Throws CheckpointError naming the
/// file when it holds something else, IoError when it cannot be read.
std::optional<TrainingEnd> ReadTrainingEnd(const std::string& model_dir);

}  // namespace est
