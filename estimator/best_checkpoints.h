#pragma once
/// The retention rule of RunConfig::keep_best_checkpoints. Internal to the estimator.

#include <string>

#include "checkpoint/retention.h"
#include "estimator/keep_best_checkpoints.h"

namespace est {

/// The file in an eval directory naming the checkpoint an evaluator task is evaluating (its
/// basename, "model.ckpt-<step>"), written before the evaluation and removed once its results
/// are: the chief keeps that checkpoint until it is scored, however many it saves meanwhile.
inline constexpr char kCheckpointInEvaluationName[] = "checkpoint_in_evaluation";

/// Chooses, among tracked checkpoints, the `options.count()` best by `options.metric()` in
/// the evaluation results of `eval_dir` (ReadEvalMetrics; a step's checkpoint is
/// model.ckpt-<step>), and the one an evaluator task is evaluating (kCheckpointInEvaluationName),
/// which may be best once scored. Checkpoints without a result, or with a NaN one, are not
/// chosen as best; ties go to the older. When the event files cannot be read it chooses every
/// tracked checkpoint, so that nothing is deleted on a guess.
checkpoint::ChooseKeptCheckpoints BestCheckpoints(std::string eval_dir, KeepBestCheckpoints options);

}  // namespace est
