#pragma once
/// WarmStartSettings (tf.estimator.WarmStartSettings): which variables a new model takes from
/// another model's checkpoint, under which names, and whether the optimizers' state comes too.

#include <torch/arg.h>

#include <map>
#include <string>
#include <vector>

namespace est {

/// Checkpoint names of the variables to warm-start, by their names in the new model.
using VariableRenames = std::map<std::string, std::string>;

/// How a model without a checkpoint of its own in model_dir starts from another checkpoint.
/// A string converts to the settings that warm-start every trainable variable from it.
struct WarmStartSettings {
  /// Warm-starts from `ckpt_to_initialize_from` (a checkpoint prefix, or a directory whose
  /// latest checkpoint is taken); an empty string warm-starts nothing.
  WarmStartSettings(std::string ckpt_to_initialize_from = "");  // NOLINT: a string converts, as in TensorFlow
  /// The same, from a C string.
  WarmStartSettings(const char* ckpt_to_initialize_from);  // NOLINT

  /// Throws ConfigError naming a regular expression that does not compile.
  void validate() const;

  /// The checkpoint (prefix or directory).
  TORCH_ARG(std::string, ckpt_to_initialize_from);
  /// ECMAScript regular expressions; a trainable variable whose whole name one of them
  /// matches is warm-started, the others keep the values model_fn gave them. The default
  /// warm-starts every trainable variable.
  TORCH_ARG(std::vector<std::string>, vars_to_warm_start) = {".*"};
  /// The checkpoint name of a warm-started variable that the checkpoint has under another
  /// name (new name -> old name).
  TORCH_ARG(VariableRenames, var_name_to_prev_var_name);
  /// Also warm-start the variables that are not trained (BatchNorm's running statistics,
  /// ModelContext buffers) that vars_to_warm_start matches; TensorFlow's default leaves them.
  TORCH_ARG(bool, warm_start_buffers) = false;
  /// Also take each optimizer's state (by its ModelContext name) from the checkpoint where it
  /// has it; TensorFlow's default starts the optimizers afresh.
  TORCH_ARG(bool, warm_start_optimizers) = false;
};

}  // namespace est
