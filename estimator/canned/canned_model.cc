#include "estimator/canned/canned_model.h"

#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/linear_model.h"
#include "estimator/feature_columns/parsing_plan.h"
#include "estimator/model_context.h"

namespace est::canned::detail {
namespace {

/// The optimizers whose spec clips their gradients (OptimizerSpec::clipnorm, global_clipnorm),
/// as one gradient transform; none when no spec clips. A sparse gradient's norm is that of its
/// values.
GradientTransform ClipByOptimizer(const std::vector<std::pair<torch::optim::Optimizer*, const OptimizerSpec*>>& made) {
  struct Clip {
    std::set<const c10::TensorImpl*> variables;
    double norm;
    bool global;
  };
  std::vector<Clip> clips;
  for (const auto& [optimizer, spec] : made) {
    if (!spec->clipnorm && !spec->global_clipnorm) continue;
    Clip clip{{}, spec->global_clipnorm.value_or(spec->clipnorm.value_or(0)), spec->global_clipnorm.has_value()};
    for (const auto& group : optimizer->param_groups())
      for (const at::Tensor& parameter : group.params()) clip.variables.insert(parameter.unsafeGetTensorImpl());
    clips.push_back(std::move(clip));
  }
  if (clips.empty()) return nullptr;
  return [clips](const std::vector<std::pair<std::string, at::Tensor>>& variables, std::vector<at::Tensor>& gradients) {
    const auto norm_of = [](const at::Tensor& gradient) {
      const at::Tensor values = gradient.is_sparse() ? gradient.coalesce().values() : gradient;
      return at::linalg_vector_norm(values, 2, {}, false, at::kDouble);
    };
    for (const Clip& clip : clips) {
      std::vector<size_t> mine;
      for (size_t i = 0; i < variables.size(); ++i)
        if (clip.variables.count(variables[i].second.unsafeGetTensorImpl()) != 0 && gradients[i].defined())
          mine.push_back(i);
      std::vector<at::Tensor> norms;
      for (size_t i : mine) norms.push_back(norm_of(gradients[i]));
      if (norms.empty()) continue;
      const at::Tensor global = at::stack(norms).square().sum().sqrt();
      for (size_t k = 0; k < mine.size(); ++k) {
        const double norm = (clip.global ? global : norms[k]).item<double>();
        if (!(norm > clip.norm) || !std::isfinite(norm)) continue;  // within the bound, or not a number
        at::Tensor& gradient = gradients[mine[k]];
        gradient = gradient.mul(clip.norm / norm);
      }
    }
  };
}

}  // namespace

namespace {

/// The bias of a baseline estimator, "bias" [logits_dimension] from zero.
class BaselineBiasImpl : public torch::nn::Module {
 public:
  explicit BaselineBiasImpl(int64_t logits_dimension)
      : bias_(register_parameter("bias", at::zeros({logits_dimension}))) {}
  at::Tensor forward(int64_t batch) { return bias_.unsqueeze(0).expand({batch, bias_.size(0)}); }

 private:
  at::Tensor bias_;
};
TORCH_MODULE(BaselineBias);

/// The linear model's categorical weights and its columns' own variables (embedding tables),
/// updated row by row, and the rest.
std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> SplitLinearVariables(
    feature_columns::LinearModel& linear) {
  std::vector<at::Tensor> dense{linear->bias()};
  for (const feature_columns::FeatureColumnPtr& column : linear->columns()) {
    if (dynamic_cast<const feature_columns::CategoricalColumn*>(column.get()) == nullptr) {
      dense.push_back(linear->weights(column->name()));
    }
  }
  std::vector<at::Tensor> sparse_rows;
  for (const at::Tensor& parameter : linear->parameters()) {
    bool is_dense = false;
    for (const at::Tensor& d : dense) is_dense = is_dense || d.is_same(parameter);
    if (!is_dense) sparse_rows.push_back(parameter);
  }
  return {dense, sparse_rows};
}

/// The DNN's embedding tables (updated row by row) and the rest.
std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> SplitDnnVariables(DnnNetwork& dnn) {
  std::vector<at::Tensor> dense;
  std::vector<at::Tensor> sparse_rows;
  for (const auto& parameter : dnn->named_parameters()) {
    const bool table = parameter.key().rfind("input_from_feature_columns/", 0) == 0;
    (table ? sparse_rows : dense).push_back(parameter.value());
  }
  return {dense, sparse_rows};
}

int64_t BatchSize(const Features& features, const at::Tensor& labels) {
  if (labels.defined() && labels.dim() >= 1) return labels.size(0);
  for (const auto& [name, tensor] : features) {
    if (tensor.defined() && tensor.dim() >= 1) return tensor.size(0);
  }
  EST_THROW(DataError, "baseline estimator: the batch has neither labels nor features to count its examples by");
}

}  // namespace

ModelFn CannedModelFn(CannedModel model) {
  EST_CHECK(model.head != nullptr, ConfigError, "canned estimator: no head");
  EST_CHECK(model.linear || model.dnn || model.baseline, ConfigError, "canned estimator: neither linear nor DNN part");
  EST_CHECK(!model.linear || !model.linear->columns.empty(), ConfigError,
            "canned estimator: the linear part has no feature columns");
  EST_CHECK(!model.dnn || !model.dnn->columns.empty(), ConfigError,
            "canned estimator: the DNN part has no feature columns");
  if (model.dnn) CheckDnnNetworkOptions(model.dnn->network);
  std::vector<feature_columns::FeatureColumnPtr> all;
  if (model.linear) all.insert(all.end(), model.linear->columns.begin(), model.linear->columns.end());
  if (model.dnn) all.insert(all.end(), model.dnn->columns.begin(), model.dnn->columns.end());
  auto plan = std::make_shared<const feature_columns::ParsingPlan>(all);
  auto shared = std::make_shared<const CannedModel>(std::move(model));
  return [shared, plan](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    const CannedModel& m = *shared;
    const int64_t units = m.head->logits_dimension();
    std::vector<std::reference_wrapper<torch::optim::Optimizer>> optimizers;
    std::vector<std::pair<torch::optim::Optimizer*, const OptimizerSpec*>> made;  // each with its spec
    const auto optimizer = [&](const std::string& name, const OptimizerSpec& spec, const char* default_name,
                               double default_rate, const std::vector<at::Tensor>& dense,
                               const std::vector<at::Tensor>& sparse_rows) {
      torch::optim::Optimizer& made_one = MakeOptimizer(ctx, name, spec, default_name, default_rate, dense, sparse_rows);
      optimizers.emplace_back(made_one);
      made.emplace_back(&made_one, &spec);
    };
    at::Tensor logits;
    const auto add = [&logits](const at::Tensor& part) { logits = logits.defined() ? logits.add(part) : part; };
    if (m.baseline) {
      auto bias = ctx.module("baseline", [&] { return BaselineBias(units); });
      add(bias->forward(BatchSize(features, labels)));
      if (mode == Mode::kTrain) {
        optimizer("baseline_optimizer", m.baseline->optimizer, "Ftrl", m.baseline->default_learning_rate,
                  bias->parameters(), {});
      }
    }
    if (m.linear || m.dnn) {
      const feature_columns::ColumnInputs inputs(features, *plan);
      if (m.linear) {
        auto linear = ctx.module("linear", [&] {
          return feature_columns::LinearModel(m.linear->columns, units, m.linear->sparse_combiner);
        });
        add(linear->forward(inputs));
        if (mode == Mode::kTrain) {
          auto [dense, sparse_rows] = SplitLinearVariables(linear);
          optimizer("linear_optimizer", m.linear->optimizer, "Ftrl", m.linear->default_learning_rate, dense,
                    sparse_rows);
        }
      }
      if (m.dnn) {
        auto dnn = ctx.module("dnn", [&] { return DnnNetwork(m.dnn->columns, units, m.dnn->network); });
        add(dnn->forward(inputs));
        if (mode == Mode::kTrain) {
          auto [dense, sparse_rows] = SplitDnnVariables(dnn);
          optimizer("dnn_optimizer", m.dnn->optimizer, "Adagrad", m.dnn->default_learning_rate, dense, sparse_rows);
        }
      }
    }
    EstimatorSpec spec = m.head->spec(mode, features, labels, logits, std::move(optimizers));
    for (const auto& [one, optimizer_spec] : made)
      if (optimizer_spec->learning_rate_schedule) spec.learning_rate(*one, *optimizer_spec->learning_rate_schedule);
    if (GradientTransform clip = ClipByOptimizer(made)) spec.transform_gradients(std::move(clip));
    return spec;
  };
}

}  // namespace est::canned::detail
