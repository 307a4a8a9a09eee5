#include "net/stop_signal_canceller.h"

#include <chrono>

#include "common/error.h"
#include "common/stop_signals.h"

namespace est::net {
namespace {

/// How often the registered calls look for a pending stop signal.
constexpr std::chrono::milliseconds kStopSignalCheck(50);

}  // namespace

StopSignalCanceller::~StopSignalCanceller() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ending_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StopSignalCanceller::add(grpc::ClientContext* context) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    contexts_.insert(context);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  wake_.notify_all();
}

void StopSignalCanceller::remove(grpc::ClientContext* context) {
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_.erase(context);
}

void ThrowIfStopSignalled(const std::string& call) {
  if (const int signal_number = StopSignalGuard::pending())
    throw Interrupted(call + " stopped by " + StopSignalName(signal_number), signal_number);
}

void StopSignalCanceller::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!ending_) {
    // Sleeps while no call is registered; looks every kStopSignalCheck while one is.
    wake_.wait(lock, [&] { return ending_ || !contexts_.empty(); });
    if (wake_.wait_for(lock, kStopSignalCheck, [&] { return ending_; })) return;
    if (StopSignalGuard::pending() == 0) continue;
    for (grpc::ClientContext* context : contexts_) context->TryCancel();
  }
}

}  // namespace est::net
