#include "distribute/collective/nccl/nccl_communicator.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "distribute/collective/nccl/nccl_status.h"
#include "distribute/collective/nccl/nccl_unique_id.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {
namespace {

using Clock = std::chrono::steady_clock;

/// Polls a non-blocking communicator until its state is no longer ncclInProgress, or the
/// deadline passes (then ncclInProgress).
ncclResult_t WaitWhileInProgress(ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t result = ncclCommGetAsyncError(comm, &state);
    if (result != ncclSuccess) return result;
    if (state != ncclInProgress) return state;
    if (Clock::now() >= deadline) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::chrono::milliseconds Remaining(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

/// The ranks whose "arrived" key under `prefix` is missing, as "[1, 3]".
std::string MissingRanks(Store& store, const std::string& prefix, int world_size) {
  std::string missing;
  try {
    for (int rank = 0; rank < world_size; ++rank) {
      if (store.check({Concat(prefix, "arrived/", rank)})) continue;
      missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
    }
  } catch (const std::exception& error) {
    return Concat("unknown (", error.what(), ")");
  }
  return "[" + missing + "]";
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::shared_ptr<Store> store, int rank, int world_size, int device,
                                   const NcclOptions& options)
    : rank_(rank), world_size_(world_size), device_(device), options_(options) {
  const std::string name = Concat("NCCL rank ", rank, " of ", world_size, " (cuda:", device, ")");
  EST_CHECK(world_size >= 1, ConfigError, "NCCL communicator: world_size is ", world_size, "; expected at least 1");
  EST_CHECK(rank >= 0 && rank < world_size, ConfigError, "NCCL communicator: rank is ", rank,
            "; expected 0 to ", world_size - 1, " in a world of ", world_size);
  EST_CHECK(store != nullptr || world_size == 1, ConfigError, name,
            ": a world of several ranks needs a store to exchange the NCCL unique id");
  EST_CHECK(options.timeout.count() > 0, ConfigError, name, ": timeout is ", options.timeout.count(),
            " ms; expected a positive timeout");
  int device_count = 0;
  cudaError_t cuda = cudaGetDeviceCount(&device_count);
  if (cuda != cudaSuccess) {
    cudaGetLastError();
    EST_THROW(ConfigError, name, ": no usable CUDA device: cudaGetDeviceCount failed with ", CudaErrorText(cuda),
              "; NCCL needs a GPU (and its driver) for every rank");
  }
  EST_CHECK(device_count > 0, ConfigError, name,
            ": no CUDA device (cudaGetDeviceCount reports 0); NCCL needs a GPU for every rank");
  EST_CHECK(device >= 0 && device < device_count, ConfigError, name, ": CUDA device ", device,
            " does not exist; this machine has ", device_count, " (expected 0 to ", device_count - 1, ")");

  const auto deadline = Clock::now() + options.timeout;
  ncclUniqueId id;
  ncclResult_t result = ncclSuccess;
  std::string prefix;
  if (store == nullptr) {
    result = ncclGetUniqueId(&id);
    EST_CHECK(result == ncclSuccess, CommunicationError, name, ": ncclGetUniqueId failed: ", NcclErrorText(result));
  } else {
    int64_t round = store->add(Concat("nccl/rank", rank, "/communicators"), 1);
    prefix = Concat("nccl/", round, "/");
    store->set(Concat(prefix, "arrived/", rank), "1");
    const std::string key = prefix + "unique_id";
    if (rank == 0) {
      result = ncclGetUniqueId(&id);
      EST_CHECK(result == ncclSuccess, CommunicationError, name, ": ncclGetUniqueId failed: ", NcclErrorText(result));
      store->set(key, EncodeNcclUniqueId(id));
    } else {
      std::string text;
      try {
        text = store->get(key, Remaining(deadline));
      } catch (const TimeoutError& error) {
        EST_THROW(TimeoutError, name, ": rank 0 did not publish the NCCL unique id within ",
                  options.timeout.count(), " ms (", error.what(), ")");
      }
      id = DecodeNcclUniqueId(text, store->describe() + " " + key);
    }
  }

  CudaDeviceGuard guard(device, name);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t handle = nullptr;
  result = ncclCommInitRankConfig(&handle, world_size, id, rank, &config);
  if (result == ncclSuccess || result == ncclInProgress) result = WaitWhileInProgress(handle, deadline);
  if (result != ncclSuccess) {
    std::string text = result == ncclInProgress ? "" : NcclErrorText(result);
    if (handle != nullptr) ncclCommAbort(handle);
    if (result == ncclInProgress) {
      std::string missing = store ? MissingRanks(*store, prefix, world_size) : "[]";
      EST_THROW(TimeoutError, name, ": NCCL initialisation did not complete within ", options.timeout.count(),
                " ms; ranks that never arrived: ", missing,
                " (when none is missing, NCCL could not connect the ranks: see NCCL_DEBUG=WARN, NCCL_SOCKET_IFNAME)");
    }
    EST_THROW(CommunicationError, name, ": NCCL initialisation failed: ", text);
  }
  comm_ = std::make_shared<NcclComm>();
  comm_->handle = handle;
  comm_->device = device;
  comm_->name = name;
  watchdog_ = options.watchdog ? options.watchdog : std::make_shared<NcclWatchdog>();
  watchdog_->watch(comm_);
}

NcclCommunicator::~NcclCommunicator() {
  bool idle = false;
  try {
    watchdog_->wait_idle(comm_, Clock::now() + options_.timeout);
    idle = true;
  } catch (const std::exception&) {
    // Failed or overdue: aborted below.
  }
  watchdog_->unwatch(comm_);
  std::lock_guard<std::mutex> lock(comm_->mutex);
  if (comm_->handle == nullptr) return;
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  if (idle) {
    ncclResult_t result = ncclCommFinalize(comm_->handle);
    if (result == ncclSuccess || result == ncclInProgress) {
      result = WaitWhileInProgress(comm_->handle, Clock::now() + options_.timeout);
    }
    if (result == ncclSuccess) {
      ncclCommDestroy(comm_->handle);
      comm_->handle = nullptr;
    }
  }
  if (comm_->handle != nullptr) ncclCommAbort(comm_->handle);
  comm_->handle = nullptr;
  if (previous >= 0) cudaSetDevice(previous);
}

void NcclCommunicator::check() const { watchdog_->check(); }

void NcclCommunicator::abort(std::exception_ptr error) { watchdog_->fail(std::move(error)); }

void NcclCommunicator::synchronize() {
  // The watchdog fails an operation at its own deadline; the second timeout is a backstop.
  watchdog_->wait_idle(comm_, Clock::now() + 2 * options_.timeout);
}

template <typename Call>
void NcclCommunicator::issue(const std::string& operation, cudaStream_t stream, Call call) {
  check();
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(comm_->mutex);
    if (comm_->handle == nullptr) {
      check();
      EST_THROW(CommunicationError, comm_->name, ": ", operation, " on a communicator that was aborted");
    }
    CudaDeviceGuard guard(device_, comm_->name);
    ncclResult_t result = call(comm_->handle);
    if (result == ncclInProgress) result = WaitWhileInProgress(comm_->handle, Clock::now() + options_.timeout);
    if (result == ncclSuccess) {
      cudaEvent_t event = nullptr;
      cudaError_t cuda = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      if (cuda == cudaSuccess) {
        cuda = cudaEventRecord(event, stream);
        if (cuda != cudaSuccess) cudaEventDestroy(event);
      }
      if (cuda == cudaSuccess) {
        watchdog_->track(comm_, event, operation, options_.timeout);
        return;
      }
      error = std::make_exception_ptr(CommunicationError(Concat(
          comm_->name, ": cannot record a CUDA event after ", operation, ": ", CudaErrorText(cuda))));
    } else if (result == ncclInProgress) {
      error = std::make_exception_ptr(TimeoutError(Concat(
          comm_->name, ": ", operation, " was not issued within ", options_.timeout.count(), " ms")));
    } else {
      error = std::make_exception_ptr(
          CommunicationError(Concat(comm_->name, ": ", operation, " failed: ", NcclErrorText(result))));
    }
  }
  // The ranks are out of step now: abort every communicator of the watchdog.
  watchdog_->fail(error);
  check();
  std::rethrow_exception(error);
}

void NcclCommunicator::allreduce(void* buffer, size_t count, NcclDataType type, NcclReduceOp op,
                                 cudaStream_t stream) {
  check();
  if (count == 0) return;
  EST_CHECK(buffer != nullptr, ConfigError, comm_->name, ": allreduce of ", count, " elements on a null buffer");
  const ncclDataType_t nccl_type = ToNcclDataType(type);
  const ncclRedOp_t nccl_op = ToNcclRedOp(op);
  issue(Concat("allreduce (", NcclOpName(op), ", ", NcclTypeName(type), " x ", count, ")"), stream,
        [&](ncclComm_t comm) { return ncclAllReduce(buffer, buffer, count, nccl_type, nccl_op, comm, stream); });
}

void NcclCommunicator::broadcast(void* buffer, size_t count, NcclDataType type, int root, cudaStream_t stream) {
  check();
  EST_CHECK(root >= 0 && root < world_size_, ConfigError, comm_->name, ": broadcast from root ", root,
            "; expected a rank from 0 to ", world_size_ - 1);
  if (count == 0) return;
  EST_CHECK(buffer != nullptr, ConfigError, comm_->name, ": broadcast of ", count, " elements on a null buffer");
  const ncclDataType_t nccl_type = ToNcclDataType(type);
  issue(Concat("broadcast (root ", root, ", ", NcclTypeName(type), " x ", count, ")"), stream,
        [&](ncclComm_t comm) { return ncclBroadcast(buffer, buffer, count, nccl_type, root, comm, stream); });
}

void NcclCommunicator::allgather(const void* input, void* output, size_t count, NcclDataType type,
                                 cudaStream_t stream) {
  check();
  if (count == 0) return;
  EST_CHECK(input != nullptr && output != nullptr, ConfigError, comm_->name, ": allgather of ", count,
            " elements with a null ", input == nullptr ? "input" : "output", " buffer");
  const ncclDataType_t nccl_type = ToNcclDataType(type);
  issue(Concat("allgather (", NcclTypeName(type), " x ", count, " per rank)"), stream,
        [&](ncclComm_t comm) { return ncclAllGather(input, output, count, nccl_type, comm, stream); });
}

}  // namespace est::distribute
