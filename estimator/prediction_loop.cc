// Estimator::predict: lazy, one example at a time.

#include <ATen/ATen.h>
#include <torch/types.h>

#include <deque>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "common/logging.h"
#include "distribute/strategy.h"
#include "estimator/estimator_impl.h"
#include "estimator/model_checkpoint.h"

namespace est {
namespace {

// Splits a batch of predictions into one Prediction per example.
void SplitBatch(const TensorMap& batch, const std::vector<std::string>& keys, std::deque<Prediction>& out) {
  int64_t batch_size = -1;
  std::string first_key;
  for (const auto& key : keys) {
    auto it = batch.find(key);
    EST_CHECK(it != batch.end(), ConfigError, "predict_keys names '", key, "', which is not a prediction of the model");
    const int64_t size = it->second.size(0);
    if (batch_size < 0) {
      batch_size = size;
      first_key = key;
    }
    EST_CHECK(size == batch_size, ModelError, "predictions disagree on the batch size: '", first_key, "' has ",
              batch_size, " but '", key, "' has ", size);
  }
  for (int64_t i = 0; i < batch_size; ++i) {
    Prediction prediction;
    for (const auto& key : keys) prediction[key] = batch.at(key)[i].to(at::kCPU);
    out.push_back(std::move(prediction));
  }
}

// The state of one predict() pass, shared by the Predictions it returns.
struct PredictionState {
  ModelFn model_fn;
  std::unique_ptr<ModelContext> ctx;
  std::unique_ptr<data::Iterator> iterator;
  std::vector<std::string> keys;
  int64_t global_step = 0;
  MixedPrecision precision = MixedPrecision::kNone;
  std::deque<Prediction> pending;
  bool exhausted = false;
};

}  // namespace

Predictions Estimator::Impl::predict(const InputFn& input_fn, const PredictOptions& options) {
  auto reader = open_checkpoint(options.checkpoint_path());
  EST_CHECK(reader != nullptr, CheckpointError, "Could not find trained model in model_dir: ", model_dir,
            "; train first or pass checkpoint_path");
  Log().info("Restoring parameters from {}", reader->prefix());
  // Prediction runs on the first local device of the evaluation strategy, over all the input.
  const c10::Device device = eval_strategy()->local_devices().front();
  auto state = std::make_shared<PredictionState>();
  state->model_fn = model_fn;
  state->ctx = std::make_unique<ModelContext>(params, device, RestoreFromCheckpoint(reader, true));
  state->iterator = input_fn(Mode::kPredict, distribute::InputContext()).make_iterator();
  state->keys = options.predict_keys();
  state->global_step = reader->global_step();
  state->precision = config.mixed_precision;

  return Predictions([state, device]() -> std::optional<Prediction> {
    while (state->pending.empty()) {
      if (state->exhausted) return std::nullopt;
      std::optional<data::Element> element = state->iterator->next();
      if (!element) {
        state->exhausted = true;
        return std::nullopt;
      }
      element->labels = at::Tensor();
      torch::NoGradGuard no_grad;
      EstimatorSpec spec = CallModelFn(state->model_fn, ToDevice(std::move(*element), device), Mode::kPredict,
                                       *state->ctx, state->global_step, state->precision);
      std::vector<std::string> keys = state->keys;
      if (keys.empty())
        for (const auto& [key, tensor] : spec.predictions) keys.push_back(key);
      SplitBatch(spec.predictions, keys, state->pending);
    }
    Prediction next = std::move(state->pending.front());
    state->pending.pop_front();
    return next;
  });
}

}  // namespace est
