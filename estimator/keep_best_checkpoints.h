#pragma once
/// Best checkpoints: the checkpoints RunConfig::keep_best_checkpoints keeps beside the newest
/// keep_checkpoint_max, chosen by an evaluation metric as TensorFlow's BestExporter chooses
/// its exports.

#include <torch/arg.h>

#include <string>

namespace est {

/// Which checkpoints are kept however old: the `count` best evaluated checkpoints by
/// `metric`, read from the evaluation's event files in model_dir (so a restarted job keeps
/// the same ones). keep_checkpoint_max never deletes them; one that is no longer among the
/// best is deleted at the next save.
struct KeepBestCheckpoints {
  /// Throws ConfigError naming the field that is out of range.
  void validate() const;

  /// The metric of the evaluation results ("loss", "accuracy", a metric of eval_metric_ops).
  TORCH_ARG(std::string, metric) = "loss";
  /// Whether a larger value is better (accuracy) rather than a smaller one (loss).
  TORCH_ARG(bool, higher_is_better) = false;
  /// How many of the best to keep, at least 1.
  TORCH_ARG(int, count) = 1;
  /// The evaluation whose results decide (EvalSpec::name, EvalOptions::name); empty: the
  /// unnamed one, in model_dir/eval.
  TORCH_ARG(std::string, eval_name);
};

/// Reads "METRIC:max" or "METRIC:min" (the direction in which the metric is better; "loss"
/// alone means "loss:min"), as est-train's --keep-best-by; ConfigError quoting `text` otherwise.
KeepBestCheckpoints ParseKeepBestBy(const std::string& text);

}  // namespace est
