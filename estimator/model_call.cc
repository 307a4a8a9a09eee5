#include "estimator/model_call.h"

#include <ATen/ATen.h>

#include <utility>

#include "common/error.h"
#include "estimator/autocast_scope.h"
#include "estimator/channels_last.h"
#include "estimator/model_code_error.h"

namespace est {
namespace {

// `tensor` on `device`; a host tensor bound for a GPU goes through pinned memory with a
// non-blocking copy, ordered on the device's current stream.
at::Tensor CopyToDevice(const at::Tensor& tensor, c10::Device device) {
  if (!tensor.defined() || tensor.device() == device) return tensor;
  if (tensor.is_cpu() && device.is_cuda()) return tensor.pin_memory().to(device, /*non_blocking=*/true);
  return tensor.to(device);
}

}  // namespace

data::Element ToDevice(data::Element element, c10::Device device, bool channels_last) {
  auto move = [&](at::Tensor& tensor) {
    tensor = CopyToDevice(tensor, device);
    if (channels_last && TakesChannelsLast(tensor)) tensor = tensor.contiguous(at::MemoryFormat::ChannelsLast);
  };
  for (auto& [name, tensor] : element.features) move(tensor);
  move(element.labels);
  return element;
}

data::Element ToDevice(data::Element element, const ModelContext& ctx) {
  return ToDevice(std::move(element), ctx.device(), ctx.channels_last());
}

EstimatorSpec CallModelFn(const ModelFn& model_fn, const data::Element& element, Mode mode, ModelContext& ctx,
                          int64_t global_step, MixedPrecision precision) {
  ctx.set_mode(mode);
  ctx.set_global_step(global_step);
  EstimatorSpec spec = RunModelCode("model_fn", mode, global_step, element, [&] {
    AutocastScope autocast(precision, ctx.device());
    return model_fn(element.features, element.labels, mode, ctx);
  });
  spec.validate(mode);
  if (mode == Mode::kTrain)
    for (const torch::optim::Optimizer* optimizer : spec.optimizers)
      EST_CHECK(ctx.owns(optimizer), ModelError,
                "the optimizer in the training EstimatorSpec was not created through ModelContext::optimizer");
  return spec;
}

}  // namespace est
