// The evaluation loop of Estimator::evaluate.

#include <ATen/ATen.h>
#include <torch/types.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "distribute/replica_group.h"
#include "distribute/strategy.h"
#include "estimator/best_checkpoints.h"
#include "estimator/batch_signature.h"
#include "estimator/estimator_impl.h"
#include "estimator/hooks/hook_runner.h"
#include "estimator/replica_set.h"
#include "estimator/summary/summary_writer.h"

namespace est {
namespace {

std::string Now() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return text;
}

// TensorFlow's "accuracy = 0.912, global_step = 938, loss = 0.251" (keys sorted).
std::string FormatResults(const EvalResult& results) {
  std::string line;
  for (const auto& [name, value] : results)
    line += fmt::format("{}{} = {}", line.empty() ? "" : ", ", name,
                        name == kGlobalStepName ? fmt::format("{}", static_cast<int64_t>(value))
                                                : fmt::format("{:.6g}", value));
  return line;
}

// Merges one batch's metrics into the running totals (the first batch's are cloned).
void MergeMetrics(const std::map<std::string, metrics::MetricPtr>& batch, std::map<std::string, metrics::MetricPtr>& totals) {
  for (const auto& [name, metric] : batch) {
    EST_CHECK(name != "loss" && name != kGlobalStepName, ModelError, "eval metric name '", name,
              "' is reserved; choose another name");
    auto [it, inserted] = totals.try_emplace(name, nullptr);
    if (inserted) {
      it->second = metric->clone();
    } else {
      it->second->merge(*metric);
    }
  }
}

// The record of the checkpoint an evaluator task evaluates (kCheckpointInEvaluationName),
// from construction until destruction, once its results are written.
class CheckpointInEvaluation {
 public:
  CheckpointInEvaluation(const std::string& results_dir, const std::string& prefix)
      : path_((std::filesystem::path(results_dir) / kCheckpointInEvaluationName).string()) {
    CreateDirectories(results_dir);
    WriteFileAtomic(path_, std::filesystem::path(prefix).filename().string() + "\n");
  }
  ~CheckpointInEvaluation() {
    std::error_code error;
    std::filesystem::remove(path_, error);
  }
  CheckpointInEvaluation(const CheckpointInEvaluation&) = delete;
  CheckpointInEvaluation& operator=(const CheckpointInEvaluation&) = delete;

 private:
  std::string path_;
};

}  // namespace

EvalResult Estimator::Impl::evaluate(const InputFn& input_fn, const EvalOptions& options) {
  EST_CHECK(options.steps().value_or(1) > 0, ConfigError, "Estimator::evaluate: steps must be positive, got ",
            *options.steps());
  const std::string results_dir = eval_dir(options.name());
  auto reader = open_checkpoint(options.checkpoint_path());
  const int64_t global_step = reader ? reader->global_step() : 0;
  if (!reader)
    Log().warn("Could not find trained model in model_dir: {}: evaluating the model as model_fn initializes it "
               "(untrained); its results are not written to {}",
               model_dir, results_dir);
  Log().info("Starting evaluation at {}", Now());
  const ModelContext::Initializers restore =
      reader ? RestoreFromCheckpoint(reader, inference_restore_mode(*reader)) : ModelContext::Initializers{};

  std::shared_ptr<distribute::Strategy> strategy = eval_strategy();
  CheckSameGlobalStep(*strategy, global_step, "evaluates");
  ReplicaSet replicas(*strategy, params, restore,
                      /*initialize_from_training=*/nullptr, config.channels_last, &config.cluster);
  // One process writes: the first worker of a group that evaluates together (eval_distribute),
  // else the training chief or the evaluator task; other workers evaluating alone do not. An
  // untrained model's results are not written: model_dir stays as it was.
  const bool writes_results =
      reader != nullptr && (config.eval_distribute ? strategy->worker_index() == 0
                                                   : train_strategy()->is_chief() || config.cluster.is_evaluator());
  FixedStepSession session(Mode::kEval, model_dir, global_step, writes_results);
  // An evaluator task names the checkpoint it evaluates, which the chief's best-checkpoint
  // retention keeps until its results are written.
  std::optional<CheckpointInEvaluation> in_evaluation;
  if (writes_results && config.cluster.is_evaluator()) in_evaluation.emplace(results_dir, reader->prefix());
  HookRunner hooks(options.hooks(), session);

  auto iterator = input_fn(Mode::kEval, strategy->input_context()).make_iterator();
  const std::optional<int64_t> steps = options.steps();
  const int64_t log_every = steps ? std::max<int64_t>(1, *steps / 10) : 100;
  std::map<std::string, metrics::MetricPtr> totals;
  double loss_sum = 0;
  int64_t batches = 0;  // local batches, one per replica per step
  int64_t evaluated_steps = 0;
  torch::NoGradGuard no_grad;
  std::vector<data::Element> elements(static_cast<size_t>(replicas.size()));
  BatchSignature batch_signature;
  while (!steps || evaluated_steps < *steps) {
    hooks.before_step();
    bool exhausted = false;
    for (auto& element : elements) {
      std::optional<data::Element> next = NextInput(*iterator, Mode::kEval, global_step);
      if (!next) {
        exhausted = true;
        break;
      }
      element = std::move(*next);
    }
    if (strategy->any_worker(exhausted)) break;
    batch_signature.check(elements, evaluated_steps);
    std::optional<EstimatorSpec> first_spec;
    replicas.group().run([&](int r) {
      ModelContext& ctx = replicas.replica(r);
      EstimatorSpec spec = CallModelFn(model_fn, ToDevice(std::move(elements[static_cast<size_t>(r)]), ctx),
                                       Mode::kEval, ctx, global_step, config.mixed_precision);
      loss_sum += spec.loss.item<double>();
      ++batches;
      MergeMetrics(spec.eval_metric_ops, totals);
      if (r == 0) first_spec = std::move(spec);
    });
    ++evaluated_steps;
    if (steps ? (evaluated_steps % log_every == 0 || evaluated_steps == *steps) : evaluated_steps % log_every == 0)
      Log().info(steps ? fmt::format("Evaluation [{}/{}]", evaluated_steps, *steps)
                       : fmt::format("Evaluation [{}]", evaluated_steps));
    if (hooks.after_step({first_spec->loss, global_step, global_step, nullptr, &first_spec->predictions})) break;
  }
  hooks.end();
  EST_CHECK(evaluated_steps > 0, DataError, "evaluation input_fn produced no batches; expected at least one");

  // Metrics and the loss over every replica of every worker.
  std::vector<at::Tensor> sums = {at::tensor({loss_sum, static_cast<double>(batches)}, at::kDouble)};
  for (auto& [name, metric] : totals) sums.push_back(metric->mutable_state());
  strategy->reduce_across_workers(distribute::ReduceOp::kSum, sums);
  EvalResult results;
  for (const auto& [name, metric] : totals) results.insert_or_assign(name, metric->result());
  results.insert_or_assign("loss", sums[0][0].item<double>() / sums[0][1].item<double>());
  Log().info("Finished evaluation at {}", Now());
  std::map<std::string, double> summaries = results;
  results.insert_or_assign(kGlobalStepName, static_cast<double>(global_step));
  Log().info("Saving dict for global step {}: {}", global_step, FormatResults(results));
  if (writes_results) {
    auto writer = SummaryWriterFor(results_dir);
    writer->add_scalars(summaries, global_step);
    writer->flush();
  }
  return results;
}

}  // namespace est
