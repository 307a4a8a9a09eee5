#pragma once
/// Calling a user's model_fn on one replica: the element moved to the replica's device, then
/// model_fn run under the replica's context and precision. Shared by the Estimator's loops
/// and serving's Predictor.

#include <c10/core/Device.h>

#include <cstdint>

#include "data/element.h"
#include "estimator/estimator_spec.h"
#include "estimator/mixed_precision.h"
#include "estimator/mode.h"
#include "estimator/model_context.h"
#include "estimator/model_fn.h"

namespace est {

/// Calls model_fn with the context prepared for `mode`, under autocast in `precision` on
/// the context's device, and validates the spec.
EstimatorSpec CallModelFn(const ModelFn& model_fn, const data::Element& element, Mode mode, ModelContext& ctx,
                          int64_t global_step, MixedPrecision precision);

/// Moves every tensor of `element` to `device` (no copy when already there) and, with
/// `channels_last`, lays out its 4-D floating tensors channels-last there. Host tensors
/// bound for a CUDA device are pinned and copied without blocking the host, on the
/// device's current stream.
data::Element ToDevice(data::Element element, c10::Device device, bool channels_last);
/// ToDevice onto the device of the replica `ctx`, in its layout.
data::Element ToDevice(data::Element element, const ModelContext& ctx);

}  // namespace est
