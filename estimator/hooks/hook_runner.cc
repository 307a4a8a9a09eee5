#include "estimator/hooks/hook_runner.h"

#include <utility>

#include "common/error.h"
#include "estimator/model_context.h"

namespace est {

RunValues SelectRunValues(const RunArgs& request, const StepOutputs& outputs) {
  const auto find = [](const TensorMap* map, const std::string& name) -> const at::Tensor* {
    if (map == nullptr) return nullptr;
    const auto it = map->find(name);
    return it == map->end() ? nullptr : &it->second;
  };
  RunValues values;
  for (const auto& name : request.tensors) {
    if (name == "loss") {
      EST_CHECK(outputs.loss.defined(), ConfigError, "a hook asked for 'loss', which a prediction step does not compute");
      values.results[name] = outputs.loss.detach();
    } else if (name == "step") {
      values.results[name] = at::scalar_tensor(outputs.step, at::kLong);
    } else if (name == kGlobalStepName) {
      values.results[name] = at::scalar_tensor(outputs.global_step, at::kLong);
    } else if (const at::Tensor* summary = find(outputs.summaries, name)) {
      values.results[name] = summary->detach();
    } else if (const at::Tensor* prediction = find(outputs.predictions, name)) {
      values.results[name] = prediction->detach();
    } else {
      EST_THROW(ConfigError, "a hook asked for '", name,
                "', which is neither loss, step, global_step, a summary nor a prediction of the model");
    }
  }
  if (request.all_summaries && outputs.summaries != nullptr)
    for (const auto& [name, tensor] : *outputs.summaries) values.results[name] = tensor.detach();
  return values;
}

std::string FixedStepSession::save_checkpoint() {
  EST_THROW(ConfigError, "save_checkpoint() is not available during ", mode_ == Mode::kEval ? "evaluation" : "prediction");
}

HookRunner::HookRunner(std::vector<HookPtr> hooks, Session& session) : hooks_(std::move(hooks)), session_(session) {
  for (auto& hook : hooks_) hook->begin();
  for (auto& hook : hooks_) hook->after_create_session(session_);
}

void HookRunner::before_step() {
  context_.emplace(session_);
  requests_.clear();
  for (auto& hook : hooks_) requests_.push_back(hook->before_run(*context_));
}

bool HookRunner::after_step(const StepOutputs& outputs) {
  EST_ASSERT(context_.has_value(), "after_step() without before_step()");
  for (size_t i = 0; i < hooks_.size(); ++i) hooks_[i]->after_run(*context_, SelectRunValues(requests_[i], outputs));
  const bool stop = context_->stop_requested();
  context_.reset();
  return stop;
}

void HookRunner::end() {
  for (auto& hook : hooks_) hook->end(session_);
}

}  // namespace est
