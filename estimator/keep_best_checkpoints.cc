#include "estimator/keep_best_checkpoints.h"

#include "common/error.h"

namespace est {

void KeepBestCheckpoints::validate() const {
  EST_CHECK(!metric().empty(), ConfigError, "keep_best_checkpoints: metric must name an evaluation metric, got ''");
  EST_CHECK(count() >= 1, ConfigError, "keep_best_checkpoints: count must be at least 1, got ", count());
}

KeepBestCheckpoints ParseKeepBestBy(const std::string& text) {
  if (text == "loss") return KeepBestCheckpoints().metric("loss").higher_is_better(false);
  const size_t colon = text.rfind(':');
  const std::string direction = colon == std::string::npos ? std::string() : text.substr(colon + 1);
  EST_CHECK(colon != std::string::npos && colon > 0 && (direction == "max" || direction == "min"), ConfigError,
            "cannot read '", text, "' as the metric of the best checkpoints: expected METRIC:max or METRIC:min "
            "(e.g. accuracy:max, loss:min), or loss");
  return KeepBestCheckpoints().metric(text.substr(0, colon)).higher_is_better(direction == "max");
}

}  // namespace est
