#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace est {

spdlog::logger& Log() {
  // Never destroyed: threads of libraries (gRPC's, Gloo's) may log while the process exits,
  // after the destructors of function-local statics have run.
  static const std::shared_ptr<spdlog::logger>* const logger = [] {
    std::shared_ptr<spdlog::logger> found = spdlog::get("est");
    if (!found) {
      found = spdlog::stderr_color_mt("est");
      found->set_pattern("%^[%Y-%m-%d %H:%M:%S.%e] [%l]%$ %v");
    }
    return new std::shared_ptr<spdlog::logger>(std::move(found));
  }();
  return **logger;
}

}  // namespace est
