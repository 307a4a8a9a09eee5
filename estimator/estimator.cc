#include "estimator/estimator.h"

#include <ATen/ATen.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/latest_valid_checkpoint.h"
#include "common/config.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "distribute/strategy.h"
#include "estimator/address_space_check.h"
#include "estimator/estimator_impl.h"

#if EST_WITH_KERNELS
#include "kernels/cpu_op_replacements.h"
#endif

namespace est {
namespace {

std::string ResolveModelDir(const std::string& argument, const RunConfig& config) {
  EST_CHECK(argument.empty() || config.model_dir.empty() || argument == config.model_dir, ConfigError,
            "model_dir is '", argument, "' but RunConfig.model_dir is '", config.model_dir,
            "'; they must agree or one must be empty");
  std::string dir = argument.empty() ? config.model_dir : argument;
  if (dir.empty()) {
    auto temp = std::filesystem::temp_directory_path() / ("est_model_" + std::to_string(::getpid()));
    dir = temp.string();
    Log().warn("Using temporary folder as model directory: {}", dir);
  }
  return dir;
}

// RunConfig::replace_slow_cpu_ops: the kernels' replacements, registered and logged once per
// process.
void ReplaceSlowCpuOps() {
  static const bool once = [] {
#if EST_WITH_KERNELS
    kernels::ReplaceSlowCpuOps();
    std::string ops;
    for (const std::string& op : kernels::ReplacedCpuOps()) ops += (ops.empty() ? "" : ", ") + op;
    Log().info("LibTorch's CPU kernels of {} replaced by est::kernels' (RunConfig::replace_slow_cpu_ops)", ops);
#else
    Log().warn("RunConfig::replace_slow_cpu_ops: this build has no kernels of its own (EST_WITH_KERNELS=OFF); "
               "LibTorch's CPU kernels run");
#endif
    return true;
  }();
  (void)once;
}

}  // namespace

Estimator::Estimator(ModelFn model_fn, std::string model_dir, RunConfig config, const nlohmann::json& params,
                     WarmStartSettings warm_start_from)
    : impl_(std::make_unique<Impl>(std::move(config))) {
  EST_CHECK(static_cast<bool>(model_fn), ConfigError, "Estimator needs a model_fn");
  impl_->config.validate();
  // The cluster is resolved once, by RunConfig; the strategies take it from there.
  for (const auto& strategy : {impl_->config.train_distribute, impl_->config.eval_distribute})
    if (strategy) strategy->configure(impl_->config.cluster);
  CheckAddressSpaceForTraining();
  if (impl_->config.replace_slow_cpu_ops) ReplaceSlowCpuOps();
  EST_CHECK(params.is_null() || params.is_object(), ConfigError, "Estimator params must be a JSON object, got ",
            params.type_name());
  impl_->model_fn = std::move(model_fn);
  impl_->model_dir = ResolveModelDir(model_dir, impl_->config);
  impl_->config.model_dir = impl_->model_dir;
  impl_->params = std::make_shared<const nlohmann::json>(params.is_null() ? nlohmann::json::object() : params);
  warm_start_from.validate();
  impl_->warm_start_from = std::move(warm_start_from);
  Log().info("Using config: model_dir = {}, save_summary_steps = {}, {}, keep_checkpoint_max = {}, "
             "log_step_count_steps = {}",
             impl_->model_dir, impl_->config.save_summary_steps,
             impl_->config.save_checkpoints_steps
                 ? fmt::format("save_checkpoints_steps = {}", *impl_->config.save_checkpoints_steps)
                 : fmt::format("save_checkpoints_secs = {}", *impl_->config.effective_save_checkpoints_secs()),
             impl_->config.keep_checkpoint_max, impl_->config.log_step_count_steps);
}

Estimator::~Estimator() = default;

Estimator& Estimator::train(const InputFn& input_fn, const TrainOptions& options) {
  impl_->train(input_fn, options);
  return *this;
}

EvalResult Estimator::evaluate(const InputFn& input_fn, const EvalOptions& options) {
  return impl_->evaluate(input_fn, options);
}

Predictions Estimator::predict(const InputFn& input_fn, const PredictOptions& options) {
  return impl_->predict(input_fn, options);
}

std::string Estimator::export_saved_model(const std::string& export_dir_base, const ServingInputFn& serving_input_fn,
                                          const ExportOptions& options) {
  return impl_->export_saved_model(export_dir_base, serving_input_fn, options);
}

std::optional<std::string> Estimator::latest_checkpoint() const {
  return checkpoint::LatestCheckpoint(impl_->model_dir);
}

std::vector<std::string> Estimator::get_variable_names() const {
  auto reader = impl_->open_checkpoint("");
  EST_CHECK(reader != nullptr, CheckpointError, "no checkpoint in model_dir ", impl_->model_dir);
  return reader->tensor_names();
}

at::Tensor Estimator::get_variable_value(const std::string& name) const {
  auto reader = impl_->open_checkpoint("");
  EST_CHECK(reader != nullptr, CheckpointError, "no checkpoint in model_dir ", impl_->model_dir);
  return reader->tensor(name);
}

const std::string& Estimator::model_dir() const { return impl_->model_dir; }

const ModelFn& Estimator::model_fn() const { return impl_->model_fn; }

std::string Estimator::eval_dir(const std::string& name) const { return impl_->eval_dir(name); }

std::string Estimator::Impl::eval_dir(const std::string& name) const {
  EST_CHECK(name.find_first_of("/\\") == std::string::npos, ConfigError,
            "evaluation name '", name,
            "' must not contain '/' or '\\': it names the directory eval_<name> directly in ", model_dir);
  return (std::filesystem::path(model_dir) / (name.empty() ? "eval" : "eval_" + name)).string();
}

const RunConfig& Estimator::config() const { return impl_->config; }

const nlohmann::json& Estimator::params() const { return *impl_->params; }

std::shared_ptr<const checkpoint::CheckpointReader> Estimator::Impl::open_checkpoint(const std::string& path) const {
  std::optional<std::string> prefix;
  if (path.empty()) {
    const checkpoint::CheckpointSearch search = checkpoint::SearchCheckpoints(model_dir);
    prefix = search.valid;
    if (!prefix && !search.rejected.empty()) {
      const std::string invalid = checkpoint::DescribeInvalidCheckpoints(model_dir, search.rejected);
      EST_CHECK(config.ignore_invalid_checkpoints, CheckpointError, invalid,
                ". Stopping rather than starting again from step 0 over them (TensorFlow raises DataLossError "
                "here): repair or move them, or set RunConfig::ignore_invalid_checkpoints (est-train "
                "--ignore-invalid-checkpoints) to start from scratch and let new checkpoints replace them");
      Log().warn("{}; starting from scratch (RunConfig::ignore_invalid_checkpoints)", invalid);
    }
  } else if (std::filesystem::is_directory(path)) {
    const checkpoint::CheckpointSearch search = checkpoint::SearchCheckpoints(path);
    prefix = search.valid;
    EST_CHECK(prefix.has_value(), CheckpointError, "no valid checkpoint in directory ", path,
              search.rejected.empty() ? "" : ": " + checkpoint::DescribeInvalidCheckpoints(path, search.rejected));
  } else {
    prefix = path;
  }
  if (!prefix) return nullptr;
  return std::make_shared<const checkpoint::CheckpointReader>(*prefix);
}

std::shared_ptr<distribute::Strategy> Estimator::Impl::train_strategy() const {
  if (config.train_distribute) return config.train_distribute;
  static const auto cpu = distribute::OneDeviceStrategy::Create("cpu");
  return cpu;
}

std::shared_ptr<distribute::Strategy> Estimator::Impl::eval_strategy() const {
  if (config.eval_distribute) return config.eval_distribute;
  // As TensorFlow: evaluation is not distributed unless eval_distribute says how. This
  // process alone evaluates, on the first device it trains on.
  return distribute::OneDeviceStrategy::Create(train_strategy()->local_devices().front().str());
}

RestoreMode Estimator::Impl::inference_restore_mode(const checkpoint::CheckpointReader& reader) const {
  const std::vector<std::string> names = reader.tensor_names();
  const bool has_averages = std::any_of(names.begin(), names.end(), [](const std::string& name) {
    return name.size() > std::strlen(kMovingAverageSuffix) &&
           name.compare(name.size() - std::strlen(kMovingAverageSuffix), std::string::npos, kMovingAverageSuffix) == 0;
  });
  const InferenceWeights chosen = config.inference_weights;
  const bool averages = chosen == InferenceWeights::kMovingAverages ||
                        (chosen == InferenceWeights::kAuto && config.moving_average.has_value());
  if (averages && has_averages) {
    Log().info("Restoring parameters from {}: the moving averages of the weights ({})", reader.prefix(),
               chosen == InferenceWeights::kAuto ? "RunConfig::moving_average" : "RunConfig::inference_weights");
    return RestoreMode::kMovingAverages;
  }
  EST_CHECK(chosen != InferenceWeights::kMovingAverages, CheckpointError, "checkpoint ", reader.prefix(),
            " holds no moving averages of the weights, which RunConfig::inference_weights = kMovingAverages reads: it "
            "was written without RunConfig::moving_average");
  if (averages)
    Log().warn("Restoring parameters from {}: the weights as trained, as it holds no moving averages of them "
               "(written without RunConfig::moving_average)",
               reader.prefix());
  else if (has_averages && chosen == InferenceWeights::kAuto)
    Log().warn("Restoring parameters from {}: the weights as trained, not the moving averages it also holds, as "
               "RunConfig::moving_average is not set; set RunConfig::inference_weights to kMovingAverages or "
               "kVariables to choose",
               reader.prefix());
  else
    Log().info("Restoring parameters from {}{}", reader.prefix(),
               has_averages ? ": the weights as trained (RunConfig::inference_weights)" : "");
  return RestoreMode::kVariables;
}

void CheckStrategyFitsCluster(const RunConfig& config, const distribute::Strategy& strategy) {
  const distribute::ClusterConfig& cluster = config.cluster;
  const bool training_task =
      cluster.task_type == distribute::TaskType::kChief || cluster.task_type == distribute::TaskType::kWorker;
  if (!training_task || cluster.num_worker_replicas <= 1) return;
  const std::string task = Concat("task ", cluster.job(), " ", cluster.task_id, " of a cluster of ",
                                  cluster.num_worker_replicas, " training tasks (", cluster.source, ")");
  EST_CHECK(config.train_distribute != nullptr, ConfigError, task,
            " has no distributing strategy: it would train a model of its own and write its checkpoints into the "
            "shared model_dir. Set RunConfig::train_distribute, e.g. to MultiWorkerMirroredStrategy::Create() or "
            "ParameterServerStrategy::Create() (est-train --strategy multi_worker or parameter_server)");
  EST_CHECK(strategy.is_chief() == cluster.is_chief, ConfigError, task, " is ", cluster.is_chief ? "" : "not ",
            "the cluster's chief, but its strategy ", strategy.name(), " takes it for ",
            strategy.is_chief() ? "the chief" : "a worker",
            ": only the chief writes checkpoints. Set RunConfig::train_distribute to a strategy that trains across "
            "the cluster's workers, e.g. MultiWorkerMirroredStrategy::Create()");
}

void CheckSameGlobalStep(distribute::Strategy& strategy, int64_t global_step, const char* what) {
  const int64_t chief = strategy.chief_value(global_step);
  EST_CHECK(chief == global_step, CheckpointError, "worker ", strategy.worker_index(), " ", what,
            " global step ", global_step, " but the chief ", what, " ", chief,
            ": every worker must see the chief's model_dir");
}

}  // namespace est
