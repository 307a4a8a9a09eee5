// The NCCL collective: distribute::Collective over one NcclCommunicator on one CUDA device,
// for LibTorch tensors.

#include "distribute/collective/nccl/nccl_collective.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "distribute/collective/collective_backend.h"
#include "distribute/collective/flight_recorder.h"
#include "distribute/collective/nccl/nccl_communicator.h"
#include "distribute/collective/nccl/nccl_stream.h"
#include "distribute/collective/nccl/nccl_tensor_type.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/store.h"

// Design notes.
// - Work runs on a stream of the collective's own (NcclStream), which waits for torch's
//   current stream before each operation; torch's current stream then waits for the
//   operation, and the caching allocator is told which memory that stream used
//   (recordStream), so that nothing is freed and reused under it.
// - Every call also waits, polling an event with a deadline, until its operation has
//   completed on the GPU: as with Gloo, a call that returns has succeeded, and a failed or
//   overdue operation throws in the call that issued it, before anyone uses its result.
//   The NCCL stream serializes operations anyway, so the gradient reducer's thread, which
//   issues bucket after bucket, loses only the host's issue latency.
// - allreduce sums (ncclSum) and kMean divides the sum on torch's current stream, as the Gloo
//   collective does: NCCL's documentation defines ncclAvg as the sum divided by the number of
//   ranks without saying how it rounds integers, or where it divides floats.
// - Tensors that are not contiguous or not on the collective's device (CPU tensors, for the
//   strategy's flags and metrics) are staged through a contiguous copy on the device; the
//   result is copied back into the caller's tensor.
// - A barrier is an all-reduce of one element: it returns once every rank has joined it.
// - Every operation goes through a flight recorder (flight_recorder.h), from its issue to its
//   completion on the GPU, which the call waits for: a dump names the operation a rank is in.

namespace est::distribute {
namespace {

using Clock = std::chrono::steady_clock;

class NcclCollective final : public Collective {
 public:
  NcclCollective(std::shared_ptr<Store> store, int rank, int world_size, c10::Device device, const NcclOptions& options)
      : device_(device),
        timeout_(options.timeout),
        communicator_(std::move(store), rank, world_size, device.index(), options),
        stream_(device.index()),
        barrier_(at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device))),
        recorder_("nccl") {
    recorder_.Identify(rank, world_size, "");
  }

  int rank() const override { return communicator_.rank(); }
  int world_size() const override { return communicator_.world_size(); }
  std::string name() const override { return "nccl"; }

  void allreduce(at::Tensor& tensor, ReduceOp op) override {
    const NcclDataType type = NcclReduceType(tensor.scalar_type());
    communicator_.check();
    if (tensor.numel() == 0) return;
    at::Tensor buffer = Staged(tensor);
    RecordedCall call(recorder_, "allreduce", buffer);
    stream_.follow_current();
    communicator_.allreduce(buffer.data_ptr(), static_cast<size_t>(buffer.numel()), type, NcclReduceOp::kSum,
                            stream_.get());
    complete({buffer});
    call.completed();
    if (op == ReduceOp::kMean) {
      if (at::isFloatingType(buffer.scalar_type())) {
        buffer.div_(world_size());
      } else {
        buffer.div_(world_size(), "trunc");
      }
    }
    Unstage(buffer, tensor);
  }

  void broadcast(at::Tensor& tensor, int root) override {
    EST_CHECK(root >= 0 && root < world_size(), ConfigError, "NCCL broadcast: root must be in [0, ", world_size(),
              "), got ", root);
    communicator_.check();
    if (tensor.numel() == 0) return;
    at::Tensor buffer = Staged(tensor);
    const NcclPayload payload = NcclCopyPayload(buffer.scalar_type(), static_cast<size_t>(buffer.numel()));
    RecordedCall call(recorder_, "broadcast", buffer);
    stream_.follow_current();
    communicator_.broadcast(buffer.data_ptr(), payload.count, payload.type, root, stream_.get());
    complete({buffer});
    call.completed();
    Unstage(buffer, tensor);
  }

  at::Tensor allgather(const at::Tensor& tensor) override {
    communicator_.check();
    std::vector<int64_t> shape{world_size()};
    shape.insert(shape.end(), tensor.sizes().begin(), tensor.sizes().end());
    at::Tensor output = at::empty(shape, tensor.options().device(device_));
    if (tensor.numel() > 0) {
      const at::Tensor input = Staged(tensor);
      const NcclPayload payload = NcclCopyPayload(input.scalar_type(), static_cast<size_t>(input.numel()));
      RecordedCall call(recorder_, "allgather", input);
      stream_.follow_current();
      communicator_.allgather(input.data_ptr(), output.data_ptr(), payload.count, payload.type, stream_.get());
      complete({input, output});
      call.completed();
    }
    return tensor.device() == device_ ? output : output.to(tensor.device());
  }

  void barrier() override { allreduce(barrier_, ReduceOp::kSum); }
  std::vector<int> lost_ranks() const override {
    const std::lock_guard<std::mutex> lock(cut_mutex_);
    return cut_;
  }
  // NCCL cannot close one peer's connection: the communicator is aborted, which ends the
  // operation in flight on this rank; the others' fail when this rank leaves the group.
  void cut_off(const std::vector<int>& ranks) override {
    std::vector<int> newly_cut;
    {
      const std::lock_guard<std::mutex> lock(cut_mutex_);
      for (int peer : ranks) {
        EST_CHECK(peer >= 0 && peer < world_size(), ConfigError, "NCCL rank ", rank(), " of ", world_size(),
                  ": cannot cut off rank ", peer, " (a rank in [0, ", world_size(), ") expected)");
        if (peer == rank() || std::find(cut_.begin(), cut_.end(), peer) != cut_.end()) continue;
        cut_.push_back(peer);
        newly_cut.push_back(peer);
      }
      std::sort(cut_.begin(), cut_.end());
    }
    if (newly_cut.empty()) return;
    communicator_.abort(std::make_exception_ptr(CommunicationError(
        "NCCL rank " + std::to_string(rank()) + " of " + std::to_string(world_size()) + " (" + device_.str() +
        "): lost " + DescribeRanks(newly_cut) +
        ", which stopped beating (its host is gone or cut off, or it is stopped); every NCCL communicator of this "
        "process was aborted, and the collective cannot be used again")));
  }

 private:
  // `tensor` itself when NCCL can work in it (contiguous, on this device), else a contiguous copy there.
  at::Tensor Staged(const at::Tensor& tensor) const {
    if (tensor.device() == device_ && tensor.is_contiguous()) return tensor;
    return tensor.to(device_, tensor.scalar_type(), /*non_blocking=*/false, /*copy=*/true,
                     at::MemoryFormat::Contiguous);
  }

  // Copies `staged` back into `tensor` when it is a staging copy.
  static void Unstage(const at::Tensor& staged, at::Tensor& tensor) {
    if (!staged.is_same(tensor)) tensor.copy_(staged);
  }

  // After an operation on `tensors` was issued: orders torch's current stream after it and
  // waits, at most the timeout, until it has completed. Throws the watchdog's error when the
  // operation failed or was overdue (the watchdog then aborted the communicator).
  void complete(const std::vector<at::Tensor>& tensors) {
    stream_.join_current(tensors);
    bool done = false;
    try {
      done = stream_.wait_until(Clock::now() + timeout_);
    } catch (const std::exception& error) {
      communicator_.check();
      EST_THROW(CommunicationError, "NCCL rank ", rank(), " of ", world_size(), " (", device_.str(),
                "): CUDA failed while waiting for an operation: ", error.what());
    }
    // Overdue: the watchdog, whose deadline for the operation passed first, aborts the
    // communicator and records a TimeoutError naming the operation, which this throws.
    if (!done) communicator_.synchronize();
    communicator_.check();
  }

  c10::Device device_;
  std::chrono::milliseconds timeout_;
  NcclCommunicator communicator_;
  NcclStream stream_;
  at::Tensor barrier_;       ///< one int32 on the device, all-reduced by barrier()
  FlightRecorder recorder_;  ///< every operation from its issue to its completion
  mutable std::mutex cut_mutex_;
  std::vector<int> cut_;  ///< the ranks cut_off() named, ascending: lost_ranks()
};

}  // namespace

std::unique_ptr<Collective> CreateNcclCollective(std::shared_ptr<Store> store, int rank, int world_size,
                                                 c10::Device device, const NcclCollectiveOptions& options) {
  EST_CHECK(device.is_cuda(), ConfigError, "NCCL collective of rank ", rank, " of ", world_size, ": device ",
            device.str(), " is not a CUDA device; NCCL needs one CUDA device per rank (\"cuda:0\")");
  if (!device.has_index()) {
    // The current device; without one (no GPU), device 0, which the communicator reports missing.
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess) {
      cudaGetLastError();
      current = 0;
    }
    device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(current));
  }
  NcclOptions communicator;
  communicator.timeout = options.timeout;
  return std::make_unique<NcclCollective>(std::move(store), rank, world_size, device, communicator);
}

namespace collective_backends {

CollectiveConnector nccl() {
  return {false, [](const CollectiveRequest& request) {
            NcclCollectiveOptions options;
            options.timeout = request.timeout;
            return CreateNcclCollective(request.store, request.rank, request.world_size, request.device, options);
          }};
}

}  // namespace collective_backends

}  // namespace est::distribute
