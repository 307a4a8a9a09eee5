#pragma once
/// LogCapture: what est::Log() prints while a test looks.

#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <memory>
#include <string>

#include "common/logging.h"

namespace est::testing {

/// Captures what est::Log() prints while it lives (the last `lines` lines), each as
/// "<level>: <message>" ("warning: …"). Create it before
/// whatever logs starts, and destroy it after that stopped: spdlog's list of sinks is not
/// guarded against a thread that logs meanwhile.
class LogCapture {
 public:
  explicit LogCapture(size_t lines = 100) : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(lines)) {
    sink_->set_pattern("%l: %v");
    Log().sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = Log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  /// Every line logged so far, each ending in a newline.
  std::string text() const {
    std::string joined;
    for (const auto& line : sink_->last_formatted()) joined += line;
    return joined;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace est::testing
