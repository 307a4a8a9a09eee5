#include "distribute/flight_recorder_signal.h"

#include "common/signal_watcher.h"
#include "distribute/collective/flight_recorder.h"

namespace est::distribute {

FlightRecorderSignal::FlightRecorderSignal(int signal_number) {
  if (signal_number == 0) return;
  watcher_ = std::make_unique<SignalWatcher>(
      signal_number, [signal_number] { LogFlightRecorders("received " + SignalName(signal_number)); });
}

FlightRecorderSignal::~FlightRecorderSignal() = default;

}  // namespace est::distribute
