#include "distribute/collective/nccl/nccl_watchdog.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "distribute/collective/nccl/nccl_status.h"

namespace est::distribute {

NcclWatchdog::NcclWatchdog(const NcclWatchdogOptions& options) : options_(options) {
  thread_ = std::thread([this] { run(); });
}

NcclWatchdog::~NcclWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  for (Operation& operation : operations_) cudaEventDestroy(operation.event);
}

void NcclWatchdog::watch(std::shared_ptr<NcclComm> comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  comms_.push_back(std::move(comm));
}

void NcclWatchdog::unwatch(const std::shared_ptr<NcclComm>& comm) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    comms_.erase(std::remove(comms_.begin(), comms_.end(), comm), comms_.end());
    auto last = std::remove_if(operations_.begin(), operations_.end(), [&](const Operation& operation) {
      if (operation.comm != comm) return false;
      cudaEventDestroy(operation.event);
      return true;
    });
    operations_.erase(last, operations_.end());
  }
  changed_.notify_all();
}

void NcclWatchdog::track(const std::shared_ptr<NcclComm>& comm, cudaEvent_t event, std::string operation,
                         std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) {
    cudaEventDestroy(event);
    return;
  }
  operations_.push_back(
      Operation{comm, event, std::move(operation), timeout, std::chrono::steady_clock::now() + timeout});
}

void NcclWatchdog::check() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

bool NcclWatchdog::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_ != nullptr;
}

void NcclWatchdog::fail(std::exception_ptr error) {
  std::vector<std::shared_ptr<NcclComm>> comms;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::move(error);
    comms = comms_;
  }
  // An owner holds a communicator's mutex only for a bounded time, and never while waiting
  // for this watchdog's mutex_ (taken above and below, not here).
  for (const auto& comm : comms) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    if (comm->handle == nullptr) continue;
    cudaSetDevice(comm->device);
    ncclCommAbort(comm->handle);
    comm->handle = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Operation& operation : operations_) cudaEventDestroy(operation.event);
    operations_.clear();
  }
  changed_.notify_all();
}

bool NcclWatchdog::idle(const NcclComm* comm) const {
  return std::none_of(operations_.begin(), operations_.end(),
                      [&](const Operation& operation) { return operation.comm.get() == comm; });
}

void NcclWatchdog::wait_idle(const std::shared_ptr<NcclComm>& comm, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, deadline, [&] { return error_ || stopping_ || idle(comm.get()); });
  if (error_) std::rethrow_exception(error_);
  EST_CHECK(idle(comm.get()), TimeoutError, comm->name, ": operations still running after the wait's deadline");
}

void NcclWatchdog::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (changed_.wait_for(lock, options_.poll_interval, [&] { return stopping_; })) return;
    }
    if (std::exception_ptr error = poll()) fail(error);
  }
}

std::exception_ptr NcclWatchdog::poll() {
  std::vector<std::shared_ptr<NcclComm>> comms;
  bool completed = false;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) return nullptr;
    comms = comms_;
    auto now = std::chrono::steady_clock::now();
    for (auto it = operations_.begin(); it != operations_.end() && !error;) {
      cudaError_t state = cudaEventQuery(it->event);
      if (state == cudaSuccess) {
        cudaEventDestroy(it->event);
        it = operations_.erase(it);
        completed = true;
        continue;
      }
      if (state != cudaErrorNotReady) {
        error = std::make_exception_ptr(CommunicationError(Concat(
            it->comm->name, ": ", it->name, " failed on the GPU: ", CudaErrorText(state),
            "; every NCCL communicator of this process was aborted")));
      } else if (now >= it->deadline) {
        error = std::make_exception_ptr(TimeoutError(Concat(
            it->comm->name, ": ", it->name, " did not complete within ", it->timeout.count(), " ms (a rank never joined it, ",
            "or a GPU is stuck); every NCCL communicator of this process was aborted")));
      }
      ++it;
    }
  }
  if (completed) changed_.notify_all();
  if (error) return error;
  for (const auto& comm : comms) {
    std::unique_lock<std::mutex> lock(comm->mutex, std::try_to_lock);
    if (!lock.owns_lock() || comm->handle == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    ncclResult_t result = ncclCommGetAsyncError(comm->handle, &state);
    if (result != ncclSuccess) state = result;
    if (state != ncclSuccess && state != ncclInProgress) {
      return std::make_exception_ptr(CommunicationError(Concat(
          comm->name, ": NCCL reported an asynchronous error: ", NcclErrorText(state),
          "; every NCCL communicator of this process was aborted")));
    }
  }
  return nullptr;
}

}  // namespace est::distribute
