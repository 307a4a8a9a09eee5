#include "estimator/input_fn.h"

#include <string>

#include "common/error.h"
#include "estimator/model_code_error.h"

namespace est {

data::Dataset InputFn::operator()(Mode mode, const distribute::InputContext& context) const {
  EST_CHECK(static_cast<bool>(fn_), ConfigError, "no input_fn was given for mode '", ModeName(mode), "'");
  return RunInputCode(
      [&] {
        return std::string("input_fn (") + ModeName(mode) + ", input pipeline " +
               std::to_string(context.input_pipeline_id()) + " of " + std::to_string(context.num_input_pipelines()) + ")";
      },
      [&] { return fn_(mode, context); });
}

std::optional<data::Element> NextInput(data::Iterator& iterator, Mode mode, int64_t step) {
  return RunInputCode(
      [&] { return "input_fn's dataset at global step " + std::to_string(step) + " (" + ModeName(mode) + ")"; },
      [&] { return iterator.next(); });
}

}  // namespace est
