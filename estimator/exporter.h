#pragma once
/// Exporters (tf.estimator.Exporter, LatestExporter, BestExporter, FinalExporter): hung on
/// EvalSpec, train_and_evaluate runs them after each evaluation, where it evaluates (locally,
/// or on the evaluator task of a cluster). Each writes exports (Estimator::export_saved_model)
/// under model_dir/export/<name>/.

#include <torch/arg.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "estimator/eval_result.h"
#include "estimator/export/export_manifest.h"
#include "estimator/export/serving_input.h"

namespace est {

class Estimator;

/// Exports a model after evaluations.
class Exporter {
 public:
  virtual ~Exporter() = default;
  /// Its directory under model_dir/export/: letters, digits, '.', '_' and '-'.
  virtual const std::string& name() const = 0;
  /// Called after an evaluation of `checkpoint_path` that gave `eval_result`, with
  /// `is_the_final_export` after the last evaluation of the training. May export it into
  /// `export_path` (model_dir/export/<name>); returns the version directory written, if any.
  virtual std::optional<std::string> export_model(Estimator& estimator, const std::string& export_path,
                                                  const std::string& checkpoint_path, const EvalResult& eval_result,
                                                  bool is_the_final_export) = 0;
};

/// Shared ownership of an exporter, as EvalSpec holds them.
using ExporterPtr = std::shared_ptr<Exporter>;

/// What the built-in exporters export: the serving input, the model's identity, and how many
/// versions to keep.
struct ExporterOptions {
  explicit ExporterOptions(ServingInputFn serving_input_fn) : serving_input_fn_(std::move(serving_input_fn)) {}
  /// The serving input of every export.
  TORCH_ARG(ServingInputFn, serving_input_fn);
  /// The identity recorded in every export (ExportOptions::model).
  TORCH_ARG(ModelIdentity, model);
  /// Export the weights alone, without the traced program (ExportOptions::weights_only).
  TORCH_ARG(bool, weights_only) = false;
  /// Also write model.onnx in this ONNX opset (ExportOptions::onnx).
  TORCH_ARG(std::optional<int64_t>, onnx);
  /// The names of the classes (ExportOptions::class_labels).
  TORCH_ARG(std::vector<std::string>, class_labels);
  /// Files written beside the weights (ExportOptions::assets).
  TORCH_ARG(ExportAssets, assets);
  /// The newest exports kept; older versions are removed (only their own files). Not used by
  /// FinalExporter.
  TORCH_ARG(int, exports_to_keep) = 5;
};

/// Exports every evaluated checkpoint, once each, keeping the newest exports_to_keep.
ExporterPtr LatestExporter(std::string name, ExporterOptions options);

/// Exports the checkpoint of the final evaluation only.
ExporterPtr FinalExporter(std::string name, ExporterOptions options);

/// True when `current` is better than `best` (BestExporter's compare_fn).
using ExportCompareFn = std::function<bool(const EvalResult& best, const EvalResult& current)>;

/// TensorFlow's default compare_fn: a smaller "loss".
ExportCompareFn LossSmaller();

/// Exports a checkpoint when its evaluation is better than every earlier one by `compare_fn`,
/// keeping the newest exports_to_keep. The earlier evaluations are read from the event files
/// of model_dir/`event_dir` (TensorFlow's event_file_pattern, "eval" by default) at the first
/// evaluation it sees, so the best survives restarts and preemption.
ExporterPtr BestExporter(std::string name, ExporterOptions options, ExportCompareFn compare_fn = LossSmaller(),
                         std::string event_dir = "eval");

}  // namespace est
