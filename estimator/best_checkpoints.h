#pragma once
/// The retention rule of RunConfig::keep_best_checkpoints. Internal to the estimator.

#include <string>

#include "checkpoint/retention.h"
#include "estimator/keep_best_checkpoints.h"

namespace est {

/// Chooses, among tracked checkpoints, the `options.count()` best by `options.metric()` in
/// the evaluation results of `eval_dir` (ReadEvalMetrics; a step's checkpoint is
/// model.ckpt-<step>). Checkpoints without a result, or with a NaN one, are not chosen; ties go
/// to the older. When the event files cannot be read it chooses every tracked checkpoint, so
/// that nothing is deleted on a guess.
checkpoint::ChooseKeptCheckpoints BestCheckpoints(std::string eval_dir, KeepBestCheckpoints options);

}  // namespace est
