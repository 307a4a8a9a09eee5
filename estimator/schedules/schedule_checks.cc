#include "estimator/schedules/schedule_checks.h"

#include <cmath>

#include "common/error.h"

namespace est::schedules {

void CheckRate(const char* schedule, const char* parameter, double value) {
  EST_CHECK(std::isfinite(value) && value >= 0 && value <= kMaxLearningRate, ConfigError, schedule, ": ", parameter,
            " is ", value, "; expected a finite learning rate >= 0, at most ", kMaxLearningRate, " (the largest float)");
}

void CheckSteps(const char* schedule, const char* parameter, int64_t value) {
  EST_CHECK(value > 0, ConfigError, schedule, ": ", parameter, " is ", value, "; expected a number of steps > 0");
}

void CheckWithin(const char* schedule, const char* parameter, double value, double low, double high) {
  EST_CHECK(std::isfinite(value) && value >= low && value <= high, ConfigError, schedule, ": ", parameter, " is ",
            value, "; expected a finite number in [", low, ", ", high, "]");
}

}  // namespace est::schedules
