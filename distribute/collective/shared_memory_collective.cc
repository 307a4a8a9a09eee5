#include "distribute/collective/shared_memory_collective.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "common/error.h"
#include "distribute/collective/flight_recorder.h"
#include "distribute/collective/host_staging.h"
#include "distribute/collective/shared_memory_allreduce.h"

namespace est::distribute {
namespace {

// All-reduce and broadcast through shared memory, the rest through the collective it decorates.
class SharedMemoryCollective final : public Collective {
 public:
  SharedMemoryCollective(std::unique_ptr<Collective> inner, std::unique_ptr<SharedMemoryAllreduce> shared_memory)
      : inner_(std::move(inner)), shared_memory_(std::move(shared_memory)), recorder_(name()) {
    recorder_.Identify(rank(), world_size(), "");
  }

  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string name() const override { return inner_->name() + "+shm"; }

  void allreduce(at::Tensor& tensor, ReduceOp op) override {
    detail::AllreduceStaged(tensor, detail::ReductionType(tensor.scalar_type(), name()), op, world_size(),
                            [&](at::Tensor& buffer) {
                              RecordedCall call(recorder_, "allreduce", buffer);
                              shared_memory_->allreduce(buffer);
                              call.completed();
                            });
  }
  void broadcast(at::Tensor& tensor, int root) override {
    EST_CHECK(root >= 0 && root < world_size(), ConfigError, name(), " broadcast: root must be in [0, ", world_size(),
              "), got ", root);
    if (tensor.numel() == 0) return;
    at::Tensor buffer = detail::Staged(tensor, tensor.scalar_type());
    RecordedCall call(recorder_, "broadcast", buffer);
    shared_memory_->broadcast(buffer, root);
    call.completed();
    detail::Unstage(buffer, tensor);
  }
  at::Tensor allgather(const at::Tensor& tensor) override { return inner_->allgather(tensor); }
  void barrier() override { inner_->barrier(); }
  std::vector<int> lost_ranks() const override {
    std::vector<int> lost = inner_->lost_ranks();
    const std::optional<int> gone = shared_memory_->lost_rank();
    if (gone && std::find(lost.begin(), lost.end(), *gone) == lost.end()) {
      lost.push_back(*gone);
      std::sort(lost.begin(), lost.end());
    }
    return lost;
  }
  void cut_off(const std::vector<int>& ranks) override {
    inner_->cut_off(ranks);
    for (int rank : ranks)
      if (rank != this->rank()) shared_memory_->cut_off(rank);
  }
  std::function<std::vector<int>()> lost_ranks_watch() const override { return shared_memory_->exited_ranks_watch(); }
  bool allreduce_computes_on_cpu() const override { return true; }

 private:
  std::unique_ptr<Collective> inner_;
  std::unique_ptr<SharedMemoryAllreduce> shared_memory_;
  FlightRecorder recorder_;  ///< the calls through shared memory; `inner_` records its own
};

}  // namespace

std::unique_ptr<Collective> WithHostSharedMemory(std::unique_ptr<Collective> inner, Store& store,
                                                 std::chrono::milliseconds timeout) {
  if (inner->world_size() == 1) return inner;
  auto shared_memory = SharedMemoryAllreduce::Connect(store, inner->rank(), inner->world_size(), timeout);
  if (!shared_memory) return inner;
  return std::make_unique<SharedMemoryCollective>(std::move(inner), std::move(shared_memory));
}

}  // namespace est::distribute
