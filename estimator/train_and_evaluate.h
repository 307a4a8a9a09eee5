#pragma once
/// train_and_evaluate with TrainSpec and EvalSpec (tf.estimator.train_and_evaluate).

#include <torch/arg.h>

#include <optional>
#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "estimator/exporter.h"

namespace est {

/// What to train on and for how long (tf.estimator.TrainSpec).
struct TrainSpec {
  explicit TrainSpec(InputFn input_fn) : input_fn_(std::move(input_fn)) {}
  /// The training input.
  TORCH_ARG(InputFn, input_fn);
  /// Train until this global step; until the input ends when unset.
  TORCH_ARG(std::optional<int64_t>, max_steps);
  /// Extra training hooks.
  TORCH_ARG(std::vector<HookPtr>, hooks);
};

/// What to evaluate on and when (tf.estimator.EvalSpec).
struct EvalSpec {
  explicit EvalSpec(InputFn input_fn) : input_fn_(std::move(input_fn)) {}
  /// The evaluation input.
  TORCH_ARG(InputFn, input_fn);
  /// Batches per evaluation; the whole input when nullopt.
  TORCH_ARG(std::optional<int64_t>, steps) = 100;
  /// Evaluation name: results go to model_dir/eval_<name>.
  TORCH_ARG(std::string, name);
  /// Extra evaluation hooks.
  TORCH_ARG(std::vector<HookPtr>, hooks);
  /// Seconds before the first evaluation of a separate evaluator process.
  TORCH_ARG(double, start_delay_secs) = 120;
  /// Minimum seconds between two evaluations; a new checkpoint sooner than that is not evaluated.
  TORCH_ARG(double, throttle_secs) = 600;
  /// An evaluator task gives up (TimeoutError) when no new checkpoint appears for this long.
  TORCH_ARG(double, checkpoint_timeout_secs) = 3600;
  /// Run after each evaluation (exporter.h), each into model_dir/export/<its name>; names
  /// must differ.
  TORCH_ARG(std::vector<ExporterPtr>, exporters);
};

/// What train_and_evaluate returns: the final evaluation's results (as EvalResult) and the
/// exports made after it (TensorFlow's `(eval_result, export_results)`).
struct TrainAndEvaluateResult : EvalResult {
  TrainAndEvaluateResult() = default;
  TrainAndEvaluateResult(EvalResult result) : EvalResult(std::move(result)) {}  // NOLINT: implicit
  /// The version directories the exporters wrote after the final evaluation.
  std::vector<std::string> export_results;
};

/// Trains and evaluates. In local mode (no cluster): trains with a checkpoint listener
/// that evaluates each new checkpoint once `throttle_secs` have passed since the last
/// evaluation, and evaluates the final checkpoint. After each evaluation (here, or on the
/// evaluator task of a cluster) the exporters run; the final one's is the final export (its
/// global step reached max_steps, or training ended). Returns the final evaluation's results
/// and the exports made after it.
TrainAndEvaluateResult train_and_evaluate(Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& eval_spec);

}  // namespace est
