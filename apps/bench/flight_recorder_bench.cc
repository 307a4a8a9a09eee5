// flight_recorder_bench: what a collective's flight recorder costs each call: nanoseconds to
// enter and leave one recorded call (RecordedCall, as every backend records its calls), alone,
// and while another thread takes records as fast as it can (a dump on demand, or a timeout's
// report, at its worst). Prints a table and one JSON line.

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "distribute/collective/flight_recorder.h"

namespace {

using Clock = std::chrono::steady_clock;
using est::distribute::FlightRecorder;
using est::distribute::RecordedCall;

// Nanoseconds per call over `calls` recorded calls of an all-reduce's size and type.
double NanosecondsPerCall(FlightRecorder& recorder, int64_t calls) {
  const auto start = Clock::now();
  for (int64_t i = 0; i < calls; ++i) {
    RecordedCall call(recorder, "allreduce", 4 << 20, "float32");
    call.completed();
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The flight recorder's cost per collective call"};
  int64_t calls = 2'000'000;
  app.add_option("--calls", calls, "Recorded calls per measurement")
      ->check(CLI::Range(int64_t{1000}, int64_t{1} << 40));
  CLI11_PARSE(app, argc, argv);

  FlightRecorder recorder("gloo");
  recorder.Identify(0, 2, "");
  NanosecondsPerCall(recorder, calls / 10);  // warm the ring and the caches
  const double alone = NanosecondsPerCall(recorder, calls);
  std::atomic<bool> done{false};
  int64_t records = 0;
  std::thread dumper([&] {
    while (!done.load(std::memory_order_relaxed)) {
      recorder.Record();
      ++records;
    }
  });
  const double dumped = NanosecondsPerCall(recorder, calls);
  done = true;
  dumper.join();

  std::printf("flight_recorder_bench: %lld recorded calls per figure (a 4 MB float32 all-reduce's record)\n",
              static_cast<long long>(calls));
  std::printf("%-44s %10.1f ns\n", "enter and leave one call", alone);
  std::printf("%-44s %10.1f ns (%lld records taken)\n", "the same while another thread takes records", dumped,
              static_cast<long long>(records));
  const nlohmann::json line = {{"bench", "flight_recorder"},
                               {"ns_per_call", alone},
                               {"ns_per_call_while_recorded", dumped},
                               {"records_taken", records}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
