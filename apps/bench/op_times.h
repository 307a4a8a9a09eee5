#pragma once
// Each LibTorch op's own time (its time less that of the ops it calls), summed while recording:
// the per-op table of make bench's estimator group. One RecordFunction callback for the process.

#include <nlohmann/json.hpp>

#include <cstdint>

namespace est_bench {

/// Starts timing every op LibTorch records, in every thread, until Stop; at most one at a time.
void StartOpTimes();

/// Stops timing; returns {op name: its own microseconds per step} over `steps` steps.
nlohmann::json StopOpTimes(int64_t steps);

}  // namespace est_bench
