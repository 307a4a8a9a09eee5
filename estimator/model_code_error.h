#pragma once
/// Errors of model code: a LibTorch error thrown inside model_fn (labels outside the
/// model's classes, images of another shape than its layers take) or inside backward of its
/// loss becomes one ModelError line naming the step, the mode and the batch, instead of a
/// LibTorch backtrace. Internal to the estimator.

#include <c10/util/Exception.h>

#include <cstdint>
#include <string>
#include <utility>

#include "data/element.h"
#include "estimator/mode.h"

namespace est {

/// "{'image': Byte [64, 28, 28]}, labels Long [64]": a batch's features and labels.
std::string DescribeBatch(const data::Element& batch);

/// Throws the ModelError for `error`, thrown by `what` ("model_fn", "backward of model_fn's
/// loss") at global step `step` in `mode` on `batch`; logs the error's backtrace at debug level.
[[noreturn]] void ThrowModelCodeError(const char* what, Mode mode, int64_t step, const data::Element& batch,
                                      const c10::Error& error);

/// Runs `body`, a call into model code, turning a c10::Error it throws into a ModelError
/// (ThrowModelCodeError). Other exceptions pass unchanged.
template <typename Body>
decltype(auto) RunModelCode(const char* what, Mode mode, int64_t step, const data::Element& batch, Body&& body) {
  try {
    return std::forward<Body>(body)();
  } catch (const c10::Error& error) {
    ThrowModelCodeError(what, mode, step, batch, error);
  }
}

}  // namespace est
