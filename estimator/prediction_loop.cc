// Estimator::predict: lazy, one example at a time.

#include <ATen/ATen.h>
#include <torch/types.h>

#include <deque>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "common/logging.h"
#include "distribute/strategy.h"
#include "estimator/estimator_impl.h"
#include "estimator/hooks/hook_runner.h"
#include "estimator/channels_last.h"
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
  std::string model_dir;
  bool is_chief = true;
  std::vector<HookPtr> hook_list;
  std::unique_ptr<FixedStepSession> session;
  std::unique_ptr<HookRunner> hooks;  ///< from the first prediction asked for until end_hooks()

  // A pass abandoned before its end still ends its hooks (as TensorFlow's generator does
  // when closed); a hook's error there cannot propagate from a destructor and is logged.
  ~PredictionState() {
    try {
      end_hooks();
    } catch (const std::exception& error) {
      Log().error("a prediction hook's end() failed: {}", error.what());
    }
  }

  void start_hooks() {
    if (hooks || exhausted) return;
    session = std::make_unique<FixedStepSession>(Mode::kPredict, model_dir, global_step, is_chief);
    hooks = std::make_unique<HookRunner>(std::move(hook_list), *session);
  }

  void end_hooks() {
    exhausted = true;
    if (!hooks) return;
    std::unique_ptr<HookRunner> ending = std::move(hooks);
    ending->end();
  }

  // Runs model_fn on the next batch into `pending`; false at the end of the input.
  bool predict_batch() {
    hooks->before_step();
    std::optional<data::Element> element = NextInput(*iterator, Mode::kPredict, global_step);
    if (!element) return false;
    element->labels = at::Tensor();
    torch::NoGradGuard no_grad;
    EstimatorSpec spec =
        CallModelFn(model_fn, ToDevice(std::move(*element), *ctx), Mode::kPredict, *ctx, global_step, precision);
    std::vector<std::string> batch_keys = keys;
    if (batch_keys.empty())
      for (const auto& [key, tensor] : spec.predictions) batch_keys.push_back(key);
    SplitBatch(spec.predictions, batch_keys, pending);
    return !hooks->after_step({at::Tensor(), global_step, global_step, nullptr, &spec.predictions});
  }
};

}  // namespace

Predictions Estimator::Impl::predict(const InputFn& input_fn, const PredictOptions& options) {
  auto reader = open_checkpoint(options.checkpoint_path());
  EST_CHECK(reader != nullptr, CheckpointError, "Could not find trained model in model_dir: ", model_dir,
            "; train first or pass checkpoint_path");
  const RestoreMode restore = inference_restore_mode(*reader);
  // Prediction runs on the first local device of the evaluation strategy, over all the input.
  const c10::Device device = eval_strategy()->local_devices().front();
  auto state = std::make_shared<PredictionState>();
  state->model_fn = model_fn;
  state->ctx = std::make_unique<ModelContext>(params, device, RestoreFromCheckpoint(reader, restore),
                                              UsesChannelsLast(config.channels_last, device));
  state->iterator = input_fn(Mode::kPredict, distribute::InputContext()).make_iterator();
  state->keys = options.predict_keys();
  state->global_step = reader->global_step();
  state->precision = config.mixed_precision;
  state->model_dir = model_dir;
  state->is_chief = config.cluster.is_chief;
  state->hook_list = options.hooks();

  return Predictions([state]() -> std::optional<Prediction> {
    while (state->pending.empty()) {
      if (state->exhausted) return std::nullopt;
      state->start_hooks();
      if (!state->predict_batch()) state->end_hooks();
    }
    Prediction next = std::move(state->pending.front());
    state->pending.pop_front();
    return next;
  });
}

}  // namespace est
