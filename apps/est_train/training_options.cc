#include "apps/est_train/training_options.h"

#include <utility>

namespace est_train {

est::ModelFn WithTrainingOptions(est::ModelFn model_fn, TrainingOptions options) {
  if (!options.learning_rate && !options.clip_norm) return model_fn;
  return [model_fn = std::move(model_fn), options = std::move(options)](
             const est::Features& features, const at::Tensor& labels, est::Mode mode, est::ModelContext& ctx) {
    est::EstimatorSpec spec = model_fn(features, labels, mode, ctx);
    if (mode != est::Mode::kTrain) return spec;
    if (options.learning_rate) spec.learning_rate(*options.learning_rate);
    if (options.clip_norm) spec.clip_gradients_by_global_norm(*options.clip_norm);
    return spec;
  };
}

}  // namespace est_train
