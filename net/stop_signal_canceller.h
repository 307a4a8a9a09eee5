#pragma once
/// StopSignalCanceller: cancels the gRPC calls registered with it once a stop signal is
/// pending (StopSignalGuard), so that a call that waits for other processes (a store key,
/// another worker's push) never outlasts a SIGTERM. Its thread starts with the first call
/// registered, and looks for a signal every 50 ms while a call is registered.

#include <grpcpp/client_context.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace est::net {

/// Cancels registered calls on a pending stop signal.
class StopSignalCanceller {
 public:
  StopSignalCanceller() = default;
  ~StopSignalCanceller();
  StopSignalCanceller(const StopSignalCanceller&) = delete;
  StopSignalCanceller& operator=(const StopSignalCanceller&) = delete;

  /// Cancels `context`'s call (TryCancel) once a stop signal is pending, until remove().
  void add(grpc::ClientContext* context);
  /// Stops watching `context`.
  void remove(grpc::ClientContext* context);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::set<grpc::ClientContext*> contexts_;
  bool ending_ = false;
  std::thread thread_;
};

/// Throws Interrupted "<call> stopped by SIGTERM" when a stop signal is pending.
void ThrowIfStopSignalled(const std::string& call);

/// Registers a call with a canceller while it lives.
class CancelOnStopSignal {
 public:
  CancelOnStopSignal(StopSignalCanceller& canceller, grpc::ClientContext& context)
      : canceller_(canceller), context_(context) {
    canceller_.add(&context_);
  }
  ~CancelOnStopSignal() { canceller_.remove(&context_); }
  CancelOnStopSignal(const CancelOnStopSignal&) = delete;
  CancelOnStopSignal& operator=(const CancelOnStopSignal&) = delete;

 private:
  StopSignalCanceller& canceller_;
  grpc::ClientContext& context_;
};

}  // namespace est::net
