#include "estimator/mixed_precision.h"

#include <cmath>

#include "common/error.h"

namespace est {

const char* MixedPrecisionName(MixedPrecision precision) {
  switch (precision) {
    case MixedPrecision::kNone:
      return "none";
    case MixedPrecision::kBFloat16:
      return "bfloat16";
    case MixedPrecision::kFloat16:
      return "float16";
  }
  return "unknown";
}

MixedPrecision ParseMixedPrecision(const std::string& name) {
  if (name == "none") return MixedPrecision::kNone;
  if (name == "bfloat16" || name == "bf16") return MixedPrecision::kBFloat16;
  if (name == "float16" || name == "fp16") return MixedPrecision::kFloat16;
  EST_THROW(ConfigError, "unknown mixed precision '", name, "'; expected none, bfloat16 (bf16) or float16 (fp16)");
}

void LossScaleOptions::validate() const {
  EST_CHECK(initial_scale() > 0 && std::isfinite(initial_scale()), ConfigError,
            "LossScaleOptions: initial_scale must be positive and finite, got ", initial_scale());
  EST_CHECK(growth_factor() > 1 && std::isfinite(growth_factor()), ConfigError,
            "LossScaleOptions: growth_factor must be > 1, got ", growth_factor());
  EST_CHECK(backoff_factor() > 0 && backoff_factor() < 1, ConfigError,
            "LossScaleOptions: backoff_factor must be in (0, 1), got ", backoff_factor());
  EST_CHECK(growth_interval() > 0, ConfigError, "LossScaleOptions: growth_interval must be positive, got ",
            growth_interval());
}

}  // namespace est
