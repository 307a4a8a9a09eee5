#include "distribute/collective/host_staging.h"

#include <ATen/ATen.h>

#include "common/error.h"

namespace est::distribute::detail {

at::ScalarType ReductionType(at::ScalarType type, const std::string& backend) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kInt:
    case at::kLong:
      return type;
    case at::kHalf:
    case at::kBFloat16:
      return at::kFloat;
    default:
      EST_THROW(ConfigError, backend, " allreduce: unsupported dtype ", at::toString(type),
                "; supported: float32, float64, float16, bfloat16, int32, int64");
  }
}

at::Tensor Staged(const at::Tensor& tensor, at::ScalarType type) {
  if (tensor.device().is_cpu() && tensor.is_contiguous() && tensor.scalar_type() == type) return tensor;
  return tensor.to(at::TensorOptions().device(at::kCPU).dtype(type), /*non_blocking=*/false, /*copy=*/true,
                   at::MemoryFormat::Contiguous);
}

void Unstage(const at::Tensor& staged, at::Tensor& tensor) {
  if (!staged.is_same(tensor)) tensor.copy_(staged);
}

void DivideForMean(at::Tensor& sum, int world_size) {
  if (at::isFloatingType(sum.scalar_type())) {
    sum.div_(world_size);
  } else {
    sum.div_(world_size, "trunc");
  }
}

void AllreduceStaged(at::Tensor& tensor, at::ScalarType type, ReduceOp op, int world_size,
                     const std::function<void(at::Tensor&)>& sum) {
  if (tensor.numel() == 0) return;
  at::Tensor buffer = Staged(tensor, type);
  sum(buffer);
  if (op == ReduceOp::kMean) DivideForMean(buffer, world_size);
  Unstage(buffer, tensor);
}

}  // namespace est::distribute::detail
