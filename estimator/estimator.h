#pragma once
/// Estimator: trains, evaluates and predicts with a model_fn (tf.estimator.Estimator).

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <torch/arg.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "estimator/eval_result.h"
#include "estimator/export/export_manifest.h"
#include "estimator/export/serving_input.h"
#include "estimator/hooks/session_run_hook.h"
#include "estimator/input_fn.h"
#include "estimator/model_context.h"
#include "estimator/model_fn.h"
#include "estimator/predictions.h"
#include "estimator/run_config.h"
#include "estimator/warm_start_settings.h"

namespace est {

/// Options of Estimator::train (the keyword arguments of tf.estimator.Estimator.train).
struct TrainOptions {
  /// Extra hooks for this call.
  TORCH_ARG(std::vector<HookPtr>, hooks);
  /// Train this many more steps (exclusive with max_steps).
  TORCH_ARG(std::optional<int64_t>, steps);
  /// Train until the global step reaches this value; nothing happens when the saved
  /// global step is already there.
  TORCH_ARG(std::optional<int64_t>, max_steps);
  /// Told of every checkpoint save.
  TORCH_ARG(std::vector<ListenerPtr>, saving_listeners);
};

/// Options of Estimator::evaluate.
struct EvalOptions {
  /// Evaluate this many batches; the whole input when unset.
  TORCH_ARG(std::optional<int64_t>, steps);
  /// Extra hooks for this call.
  TORCH_ARG(std::vector<HookPtr>, hooks);
  /// The checkpoint to evaluate; the latest one in model_dir when empty.
  TORCH_ARG(std::string, checkpoint_path);
  /// Results go to model_dir/eval_<name> instead of model_dir/eval.
  TORCH_ARG(std::string, name);
};

/// Options of Estimator::predict.
struct PredictOptions {
  /// Only these prediction keys (all when empty); an unknown key is an error.
  TORCH_ARG(std::vector<std::string>, predict_keys);
  /// The checkpoint to predict with; the latest one in model_dir when empty.
  TORCH_ARG(std::string, checkpoint_path);
  /// Hooks around each batch of the pass: begin() and after_create_session() when the first
  /// prediction is asked for, end() when the input ends, a hook stops the pass, or the
  /// Predictions are destroyed. A stop takes effect after the current batch's predictions.
  TORCH_ARG(std::vector<HookPtr>, hooks);
};

/// Options of Estimator::export_saved_model.
struct ExportOptions {
  /// The checkpoint to export; the latest one in model_dir when empty.
  TORCH_ARG(std::string, checkpoint_path);
  /// Who the model is: a Predictor refuses an export of another name or version.
  TORCH_ARG(ModelIdentity, model);
  /// Evaluation metrics to record in the export (an exporter's evaluation).
  TORCH_ARG(EvalResult, metrics);
  /// Export the weights alone, without the traced program (model.pt): for a model_fn the tracer
  /// cannot record. Such an export is served only with the model_fn that made it.
  TORCH_ARG(bool, weights_only) = false;
  /// Also write the traced program as an ONNX model (model.onnx) in this ONNX operator set
  /// (opset, kOnnxMinOpset..kOnnxMaxOpset: 13 to 17), which onnxruntime runs: `.onnx(17)`. An
  /// operator with no ONNX mapping is a ModelError naming it (docs/serving.md lists those mapped).
  /// Not with weights_only.
  TORCH_ARG(std::optional<int64_t>, onnx);
  /// The names of a classifier's classes, in the order of its scores (`probabilities` or
  /// `scores`): TensorFlow Serving's Classify answers by them (a canned classifier's
  /// label_vocabulary). Empty: classes are named by their index ("0", "1", ...).
  TORCH_ARG(std::vector<std::string>, class_labels);
  /// Files the model needs beside its weights, name → contents (a vocabulary, est-train's spec of
  /// a canned estimator), written to the export's `assets/` as a SavedModel's assets and checked
  /// by size and CRC32C when read (ReadExportFile). Names are plain file names: ConfigError else.
  TORCH_ARG(ExportAssets, assets);
};

/// The Estimator of tf.estimator for LibTorch. It calls model_fn eagerly every step;
/// the state model_fn creates through its ModelContext is checkpointed in model_dir. A
/// new Estimator on a model_dir with checkpoints resumes from the latest one (global
/// step, variables, optimizer state and input position).
class Estimator {
 public:
  /// `model_dir` wins over config.model_dir; when both are empty a temporary directory
  /// is used (and logged). `params` is handed to model_fn through ModelContext::params().
  /// `warm_start_from` names a checkpoint (prefix or directory) whose trainable variables
  /// initialise a model that has no checkpoint of its own in model_dir, or says which
  /// variables it gives, under which names (WarmStartSettings).
  Estimator(ModelFn model_fn, std::string model_dir = "", RunConfig config = {},
            const nlohmann::json& params = nlohmann::json::object(), WarmStartSettings warm_start_from = {});
  ~Estimator();
  Estimator(const Estimator&) = delete;
  Estimator& operator=(const Estimator&) = delete;

  /// Trains until `steps`/`max_steps`, a hook's stop request, or the end of the input.
  Estimator& train(const InputFn& input_fn, const TrainOptions& options = {});
  /// Evaluates a checkpoint; writes the results to eval_dir(name) and returns them.
  EvalResult evaluate(const InputFn& input_fn, const EvalOptions& options = {});
  /// Predictions one example at a time, computed lazily batch by batch.
  Predictions predict(const InputFn& input_fn, const PredictOptions& options = {});

  /// Exports a checkpoint for serving (tf.estimator.Estimator.export_saved_model): a new
  /// version under `export_dir_base` (export_directory.h) holding the inference weights
  /// (the moving averages with RunConfig::moving_average; no optimizer state), the serving
  /// signature (the inputs `serving_input_fn` declares, and the predictions model_fn makes of
  /// them), the model's identity, params and global step, and — unless options.weights_only —
  /// the traced program of model_fn's predictions with those weights (model.pt, TorchScript:
  /// runs without the model's code; program_tracer.h). ModelError naming the output where the
  /// traced program does not compute what model_fn does. Returns the version's directory.
  std::string export_saved_model(const std::string& export_dir_base, const ServingInputFn& serving_input_fn,
                                 const ExportOptions& options = {});

  /// The latest checkpoint prefix in model_dir, if any.
  std::optional<std::string> latest_checkpoint() const;
  /// Names of the variables in the latest checkpoint.
  std::vector<std::string> get_variable_names() const;
  /// The value of a variable in the latest checkpoint; CheckpointError when absent.
  at::Tensor get_variable_value(const std::string& name) const;

  /// Where checkpoints and training summaries go.
  const std::string& model_dir() const;
  /// model_dir/eval, or model_dir/eval_<name>. Throws ConfigError when `name` contains a slash
  /// or a backslash, which would lead out of model_dir.
  std::string eval_dir(const std::string& name = "") const;
  /// The configuration, after validation.
  const RunConfig& config() const;
  /// The params handed to model_fn.
  const nlohmann::json& params() const;
  /// The model_fn it calls (tf.estimator's Estimator.model_fn): a canned estimator's own, to
  /// serve its exports with (serving::Predictor).
  const ModelFn& model_fn() const;

  /// The state behind the Estimator (estimator_impl.h), shared by its loops.
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace est
