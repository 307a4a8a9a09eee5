#pragma once
/// The state behind an Estimator, shared by its training, evaluation and prediction
/// loops (each in its own file). Internal to the estimator.

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "estimator/estimator.h"
#include "estimator/model_call.h"
#include "estimator/model_checkpoint.h"
#include "estimator/model_context.h"

namespace est {
namespace checkpoint {
class CheckpointReader;
}

struct Estimator::Impl {
  /// Takes the Estimator's config (a default RunConfig would resolve the cluster again).
  explicit Impl(RunConfig run_config) : config(std::move(run_config)) {}

  ModelFn model_fn;
  std::string model_dir;
  RunConfig config;
  std::shared_ptr<const nlohmann::json> params;
  WarmStartSettings warm_start_from;
  /// The first train() call continues the input where the restored checkpoint left it;
  /// later calls start their input_fn from the beginning, as TensorFlow does.
  bool input_position_restored = false;

  /// training loop (training_loop.cc)
  void train(const InputFn& input_fn, const TrainOptions& options);
  /// evaluation loop (evaluation_loop.cc)
  EvalResult evaluate(const InputFn& input_fn, const EvalOptions& options);
  /// prediction (prediction_loop.cc)
  Predictions predict(const InputFn& input_fn, const PredictOptions& options);
  /// export (export/saved_model_export.cc)
  std::string export_saved_model(const std::string& export_dir_base, const ServingInputFn& serving_input_fn,
                                 const ExportOptions& options);

  /// The checkpoint at `path` (a prefix or a directory), or the newest valid one in
  /// model_dir when `path` is empty; nullptr when there is none. CheckpointError listing
  /// them when model_dir holds checkpoints and none is valid, unless
  /// config.ignore_invalid_checkpoints (then nullptr, with a warning).
  std::shared_ptr<const checkpoint::CheckpointReader> open_checkpoint(const std::string& path) const;
  /// model_dir/eval, or model_dir/eval_<name>.
  std::string eval_dir(const std::string& name) const;
  /// The strategy of training: config.train_distribute, or one CPU replica.
  std::shared_ptr<distribute::Strategy> train_strategy() const;
  /// The strategy of evaluation and prediction: eval_distribute, else one replica on the first
  /// device of train_strategy() (evaluation not distributed, as TensorFlow's).
  std::shared_ptr<distribute::Strategy> eval_strategy() const;
  /// What evaluation, prediction and export restore from `reader`: its moving averages or its
  /// variables, as config.inference_weights chooses. Logs "Restoring parameters from <prefix>"
  /// with the weights chosen, and a warning where the checkpoint holds averages that the
  /// default choice reads past; CheckpointError where kMovingAverages finds none.
  RestoreMode inference_restore_mode(const checkpoint::CheckpointReader& reader) const;
};

/// Checks, before a training task of a cluster trains, that `strategy` trains it in the
/// cluster's group: ConfigError naming the fix when no strategy is set (the task would train a
/// model of its own and write checkpoints into the shared model_dir) or when the strategy takes
/// for the chief a task the cluster does not (only the chief writes checkpoints).
void CheckStrategyFitsCluster(const RunConfig& config, const distribute::Strategy& strategy);

/// Checks that every worker of `strategy` is at the chief's global step (each worker
/// reads model_dir itself); CheckpointError naming both steps otherwise.
void CheckSameGlobalStep(distribute::Strategy& strategy, int64_t global_step, const char* what);

}  // namespace est
