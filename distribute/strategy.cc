#include "distribute/strategy.h"

#include <ATen/ATen.h>

#include <string>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/default_devices.h"

namespace est::distribute {

c10::Device ParseDevice(const std::string& device) {
  std::optional<c10::Device> parsed;
  try {
    parsed.emplace(device);
  } catch (const std::exception&) {
    EST_THROW(ConfigError, "cannot parse device '", device, "'; expected \"cpu\" or \"cuda:<index>\"");
  }
  EST_CHECK(parsed->is_cpu() || parsed->is_cuda(), ConfigError, "device '", device,
            "' is neither a CPU nor a CUDA device; expected \"cpu\" or \"cuda:<index>\"");
  return *parsed;
}

void CheckDeviceAvailable(c10::Device device) {
  if (!device.is_cuda()) return;
  const int count = CudaDeviceCount();
  EST_CHECK(count > 0, ConfigError, "device '", device.str(),
            "' needs CUDA, but LibTorch sees no CUDA device (this LibTorch has no CUDA, or no GPU is visible); "
            "use \"cpu\"");
  EST_CHECK(device.index() < count, ConfigError, "device '", device.str(), "' does not exist: LibTorch sees ", count,
            " CUDA device(s), cuda:0 to cuda:", count - 1);
}

TrainingSync Strategy::make_training_sync(const StepSyncOptions& options) {
  return {CreateAllReduceStepSync(*this, options, GradientReducerOptions{}),
          CreateReplicaVariables(*this, BufferSync::kBroadcast)};
}

Collective& Strategy::model_collective() {
  EST_THROW(ConfigError, name(), ": model_fn's collectives reach this process's replicas only");
}

void Strategy::serve() {
  EST_THROW(ConfigError, name(), " has no tasks that serve others: task type 'ps' needs ParameterServerStrategy");
}

InputContext Strategy::input_context() const {
  return InputContext(num_workers(), worker_index(), num_replicas_in_sync());
}

void Strategy::sum_across_workers(std::vector<at::Tensor>& tensors) {
  Collective* workers = collective();
  if (workers == nullptr) return;
  for (auto& tensor : tensors) workers->allreduce(tensor, ReduceOp::kSum);
}

void Strategy::broadcast_from_chief(std::vector<at::Tensor>& tensors) {
  Collective* workers = collective();
  if (workers == nullptr) return;
  for (auto& tensor : tensors) {
    // On its own device: the collective stages what it cannot use in place.
    at::Tensor staged = tensor.detach().contiguous();
    workers->broadcast(staged, 0);
    tensor.detach().copy_(staged);
  }
}

void Strategy::reduce_across_workers(ReduceOp op, std::vector<at::Tensor>& totals) {
  sum_across_workers(totals);
  if (op == ReduceOp::kMean && num_workers() > 1)
    for (auto& total : totals) total.div_(num_workers());
}

int64_t Strategy::chief_value(int64_t value) {
  std::vector<at::Tensor> chief = {at::scalar_tensor(value, at::kLong).reshape({1})};
  broadcast_from_chief(chief);
  return chief[0].item<int64_t>();
}

bool Strategy::any_worker(bool flag) {
  Collective* workers = collective();
  if (workers == nullptr) return flag;
  at::Tensor count = at::scalar_tensor(flag ? 1 : 0, at::kLong).reshape({1});
  workers->allreduce(count, ReduceOp::kSum);
  return count.item<int64_t>() > 0;
}

void Strategy::barrier() {
  if (Collective* workers = collective()) workers->barrier();
}

void Strategy::average_across_replicas(std::vector<std::vector<at::Tensor>>& per_replica) {
  EST_ASSERT(static_cast<int>(per_replica.size()) == num_local_replicas(), "one tensor list per local replica");
  if (num_replicas_in_sync() == 1 || per_replica[0].empty()) return;
  const size_t count = per_replica[0].size();
  // Everything travels in one flat buffer of the tensors' common floating dtype (float32
  // for a float32 model), so one collective call serves gradients, loss and summaries.
  at::ScalarType dtype = at::kFloat;
  for (const auto& value : per_replica[0])
    if (value.defined()) dtype = at::promote_types(dtype, value.scalar_type());
  if (!at::isFloatingType(dtype)) dtype = at::kDouble;
  // The local replicas' sum is taken on the first local device when it is a GPU (and reduced
  // across workers there), else on the CPU.
  const c10::Device first = local_devices().front();
  const c10::Device device = first.is_cuda() ? first : c10::Device(at::kCPU);
  std::vector<at::Tensor> flat_parts;
  flat_parts.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    at::Tensor sum;
    for (auto& replica : per_replica) {
      EST_ASSERT(replica.size() == count, "replicas disagree on the number of tensors");
      const at::Tensor& value = replica[i];
      if (!value.defined()) continue;
      at::Tensor on_device = value.detach().to(device, dtype).reshape({-1});
      sum = sum.defined() ? sum.add_(on_device) : on_device.clone();
    }
    if (!sum.defined()) {
      const at::Tensor& shape_source = per_replica[0][i];
      sum = at::zeros({shape_source.defined() ? shape_source.numel() : 0},
                      at::TensorOptions().dtype(dtype).device(device));
    }
    flat_parts.push_back(sum);
  }
  at::Tensor flat = at::cat(flat_parts);
  if (Collective* workers = collective()) workers->allreduce(flat, ReduceOp::kSum);
  flat.div_(num_replicas_in_sync());
  int64_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    const int64_t n = flat_parts[i].numel();
    at::Tensor mean = flat.narrow(0, offset, n);
    offset += n;
    for (auto& replica : per_replica) {
      at::Tensor& value = replica[i];
      if (value.defined()) value.detach().copy_(mean.view(value.sizes()));
    }
  }
}

at::Tensor Strategy::reduce(ReduceOp op, const std::vector<at::Tensor>& per_replica, std::optional<int64_t> axis) {
  EST_CHECK(static_cast<int>(per_replica.size()) == num_local_replicas(), ConfigError, name(),
            ".reduce: expected one value per local replica (", num_local_replicas(), "), got ", per_replica.size());
  at::Tensor sum;
  int64_t elements = 0;
  for (const auto& value : per_replica) {
    at::Tensor v = value.detach().to(at::kCPU, at::kDouble);
    if (axis) {
      elements += v.size(*axis);
      v = v.sum(*axis);
    }
    sum = sum.defined() ? sum + v : v;
  }
  std::vector<at::Tensor> totals = {sum.contiguous(), at::scalar_tensor(static_cast<double>(elements), at::kDouble).reshape({1})};
  sum_across_workers(totals);
  at::Tensor result = totals[0];
  if (op == ReduceOp::kMean) result = result / (axis ? totals[1].item<double>() : num_replicas_in_sync());
  return result.to(per_replica.front().scalar_type());
}

OneDeviceStrategy::OneDeviceStrategy(const std::string& device) : device_(ParseDevice(device)) {}

std::shared_ptr<OneDeviceStrategy> OneDeviceStrategy::Create(const std::string& device) {
  return std::make_shared<OneDeviceStrategy>(device);
}

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices, BufferSync buffer_sync)
    : buffer_sync_(buffer_sync) {
  std::vector<std::string> names = devices;
  if (names.empty()) {
    names = EveryLocalDevice(CudaDeviceCount());
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    Log().info("MirroredStrategy: no devices given: {}",
               names.front() == "cpu" ? "the CPU (LibTorch sees no GPU)" : "every GPU, " + list);
  }
  for (const auto& device : names) devices_.push_back(ParseDevice(device));
}

std::shared_ptr<MirroredStrategy> MirroredStrategy::Create(const std::vector<std::string>& devices,
                                                           BufferSync buffer_sync) {
  return std::make_shared<MirroredStrategy>(devices, buffer_sync);
}

TrainingSync MirroredStrategy::make_training_sync(const StepSyncOptions& options) {
  return {CreateAllReduceStepSync(*this, options, GradientReducerOptions{}), CreateReplicaVariables(*this, buffer_sync_)};
}

const char* BufferSyncName(BufferSync sync) {
  switch (sync) {
    case BufferSync::kBroadcast: return "broadcast";
    case BufferSync::kAverage: return "average";
    case BufferSync::kNone: return "none";
  }
  return "unknown";
}

}  // namespace est::distribute
