#pragma once
/// InputFn: the user's input_fn, in any of the forms TensorFlow accepts.

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "data/dataset.h"
#include "distribute/input_context.h"
#include "estimator/mode.h"

namespace est {

/// Wraps an input_fn taking (Mode, const InputContext&), (Mode), or nothing, and
/// returning a data::Dataset of (features, labels) batches.
class InputFn {
 public:
  using Function = std::function<data::Dataset(Mode, const distribute::InputContext&)>;

  InputFn() = default;
  /// Accepts any callable of the three forms.
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, InputFn>>>
  InputFn(F&& fn) : fn_(Wrap(std::forward<F>(fn))) {}  // NOLINT: implicit on purpose

  /// The dataset for `mode` and this input pipeline. What the function throws, other than an
  /// est::Error, becomes a DataError naming the mode and the input pipeline.
  data::Dataset operator()(Mode mode, const distribute::InputContext& context) const;
  /// True when a function is set.
  explicit operator bool() const { return static_cast<bool>(fn_); }

 private:
  template <typename F>
  static Function Wrap(F&& fn) {
    using Fn = std::decay_t<F>;
    if constexpr (std::is_invocable_r_v<data::Dataset, Fn, Mode, const distribute::InputContext&>) {
      return Function(std::forward<F>(fn));
    } else if constexpr (std::is_invocable_r_v<data::Dataset, Fn, Mode>) {
      return [f = Fn(std::forward<F>(fn))](Mode mode, const distribute::InputContext&) { return f(mode); };
    } else {
      static_assert(std::is_invocable_r_v<data::Dataset, Fn>,
                    "input_fn must return a data::Dataset and take (Mode, const InputContext&), (Mode) or ()");
      return [f = Fn(std::forward<F>(fn))](Mode, const distribute::InputContext&) { return f(); };
    }
  }

  Function fn_;
};

/// The next element of `iterator` over input_fn's dataset in `mode` at global step `step`, or
/// std::nullopt at its end. What the dataset throws (a user's map function's exception, say),
/// other than an est::Error, becomes a DataError naming the mode and the step.
std::optional<data::Element> NextInput(data::Iterator& iterator, Mode mode, int64_t step);

}  // namespace est
