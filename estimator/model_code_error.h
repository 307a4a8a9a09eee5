#pragma once
/// Errors of user code: an exception thrown inside model_fn (LibTorch's on labels outside the
/// model's classes or images of another shape than its layers take, std::out_of_range of a
/// feature that is not there, any other) or inside backward of its loss becomes one
/// ModelError line naming the step, the mode and the batch, instead of a LibTorch backtrace
/// or "terminate called"; one thrown by input_fn or its dataset becomes a DataError naming
/// the mode and the step. est::Error (already a user error) and InternalError (a bug of
/// ours) pass unchanged. Internal to the estimator.

#include <cstdint>
#include <string>
#include <utility>

#include "common/error.h"
#include "data/element.h"
#include "estimator/mode.h"

namespace est {

/// "{'image': Byte [64, 28, 28]}, labels Long [64]": a batch's features and labels.
std::string DescribeBatch(const data::Element& batch);

/// The exception in flight, on one line: LibTorch's message without its backtrace, another
/// exception's type and message ("std::out_of_range: map::at"). Call it inside a catch block.
std::string DescribeCurrentException();

/// Throws the ModelError for the exception in flight, thrown by `what` ("model_fn", "backward
/// of model_fn's loss") at global step `step` in `mode` on `batch`; logs LibTorch's backtrace
/// at debug level. Call it inside a catch block.
[[noreturn]] void ThrowModelCodeError(const char* what, Mode mode, int64_t step, const data::Element& batch);

/// Throws the DataError "<where> failed: <the exception in flight>", `where` naming the call
/// into input code ("input_fn's dataset at global step 12 (Mode::kTrain)"). Call it inside a
/// catch block.
[[noreturn]] void ThrowInputCodeError(const std::string& where);

/// Runs `body`, a call into user code. What it throws, other than an est::Error (already a
/// user error) or an InternalError (a bug of ours), goes to `on_error`, called inside the catch
/// block, which throws the error that replaces it.
template <typename Body, typename OnError>
decltype(auto) RunUserCode(Body&& body, OnError&& on_error) {
  try {
    return std::forward<Body>(body)();
  } catch (const Error&) {
    throw;
  } catch (const InternalError&) {
    throw;
  } catch (...) {
    std::forward<OnError>(on_error)();
    throw;  // not reached: on_error throws
  }
}

/// Runs `body`, a call into model code, turning what it throws into a ModelError
/// (ThrowModelCodeError).
template <typename Body>
decltype(auto) RunModelCode(const char* what, Mode mode, int64_t step, const data::Element& batch, Body&& body) {
  return RunUserCode(std::forward<Body>(body), [&] { ThrowModelCodeError(what, mode, step, batch); });
}

/// Runs `body`, a call into input_fn or its dataset, turning what it throws into a DataError
/// (ThrowInputCodeError) whose message starts with `where()`, called only then.
template <typename Where, typename Body>
decltype(auto) RunInputCode(Where&& where, Body&& body) {
  return RunUserCode(std::forward<Body>(body), [&] { ThrowInputCodeError(where()); });
}

}  // namespace est
