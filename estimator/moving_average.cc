#include "estimator/moving_average.h"

#include <cmath>

#include "common/error.h"

namespace est {

void MovingAverageOptions::validate() const {
  EST_CHECK(std::isfinite(decay()) && decay() >= 0 && decay() <= 1, ConfigError,
            "RunConfig::moving_average: decay is ", decay(), "; expected a number in [0, 1]");
}

}  // namespace est
