#include "estimator/warm_start_settings.h"

#include <regex>
#include <utility>

#include "common/error.h"

namespace est {

WarmStartSettings::WarmStartSettings(std::string ckpt_to_initialize_from)
    : ckpt_to_initialize_from_(std::move(ckpt_to_initialize_from)) {}

WarmStartSettings::WarmStartSettings(const char* ckpt_to_initialize_from)
    : WarmStartSettings(std::string(ckpt_to_initialize_from == nullptr ? "" : ckpt_to_initialize_from)) {}

void WarmStartSettings::validate() const {
  for (const std::string& pattern : vars_to_warm_start()) {
    try {
      std::regex compiled(pattern);
    } catch (const std::regex_error& error) {
      EST_THROW(ConfigError, "WarmStartSettings: vars_to_warm_start '", pattern,
                "' is not a regular expression (ECMAScript): ", error.what());
    }
  }
}

}  // namespace est
