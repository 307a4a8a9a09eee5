#pragma once
/// NcclWatchdog: a thread that watches NCCL communicators and the operations issued on
/// them, and aborts every one of them on the first asynchronous error or overdue operation.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace est::distribute {

/// One NCCL communicator as its owner and the watchdog share it. NCCL lets one thread at a
/// time call into a communicator: whoever calls NCCL on `handle` holds `mutex`, for a
/// bounded time only (the communicator is non-blocking).
struct NcclComm {
  /// The communicator; null once destroyed or aborted.
  ncclComm_t handle = nullptr;
  /// Its CUDA device.
  int device = 0;
  /// "NCCL rank 1 of 2 (cuda:0)", for messages.
  std::string name;
  /// Held around every NCCL call on `handle`.
  std::mutex mutex;
};

/// Options of the watchdog.
struct NcclWatchdogOptions {
  /// How often the thread polls communicators' errors and operations' events.
  std::chrono::milliseconds poll_interval = std::chrono::milliseconds(10);
};

/// Watches communicators (ncclCommGetAsyncError) and issued operations (a CUDA event
/// recorded after each one, polled with cudaEventQuery). On an asynchronous error, a failed
/// event or an operation still running at its deadline, it records the error (the first
/// one: CommunicationError, or TimeoutError for an overdue operation, naming the rank, the
/// operation and NCCL's or CUDA's error text), then aborts every communicator it watches
/// (ncclCommAbort). `check()` throws that error from then on. Thread-safe.
class NcclWatchdog {
 public:
  explicit NcclWatchdog(const NcclWatchdogOptions& options = {});
  /// Stops the thread. Communicators still watched are left to their owners.
  ~NcclWatchdog();
  NcclWatchdog(const NcclWatchdog&) = delete;
  NcclWatchdog& operator=(const NcclWatchdog&) = delete;

  /// Watches `comm` until `unwatch(comm)`.
  void watch(std::shared_ptr<NcclComm> comm);
  /// Stops watching `comm` and forgets its operations, destroying their events.
  void unwatch(const std::shared_ptr<NcclComm>& comm);
  /// Tracks an operation issued on `comm`: `event` (owned from now on) was recorded on its
  /// stream after it; it must complete within `timeout` from now. `operation` names it in
  /// errors: "allreduce (sum, float32 x 1024)".
  void track(const std::shared_ptr<NcclComm>& comm, cudaEvent_t event, std::string operation,
             std::chrono::milliseconds timeout);
  /// Throws the recorded error, if any.
  void check() const;
  /// True once an error was recorded (and every communicator aborted).
  bool failed() const;
  /// Records `error` (unless one is recorded already) and aborts every watched communicator.
  void fail(std::exception_ptr error);
  /// Waits until every operation tracked on `comm` completed, then checks. Throws the
  /// recorded error, or TimeoutError when `deadline` passes first.
  void wait_idle(const std::shared_ptr<NcclComm>& comm, std::chrono::steady_clock::time_point deadline);

 private:
  struct Operation {
    std::shared_ptr<NcclComm> comm;
    cudaEvent_t event;
    std::string name;
    std::chrono::milliseconds timeout;
    std::chrono::steady_clock::time_point deadline;
  };

  void run();
  /// One round of polling; returns the error found, if any.
  std::exception_ptr poll();
  bool idle(const NcclComm* comm) const;

  NcclWatchdogOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::shared_ptr<NcclComm>> comms_;
  std::vector<Operation> operations_;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace est::distribute
