#pragma once
/// What the host-memory collectives (Gloo, shared memory) share: the type each dtype is
/// summed in, staging a tensor into a contiguous CPU buffer of that type and back, and the
/// division that turns a sum into a mean.

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

#include "distribute/collective/collective.h"

namespace est::distribute::detail {

/// The type `type` is summed in (float16 and bfloat16 in float32), or ConfigError naming
/// `backend` and the supported dtypes.
at::ScalarType ReductionType(at::ScalarType type, const std::string& backend);

/// `tensor` itself when it is a contiguous CPU tensor of `type`, else such a copy of it.
at::Tensor Staged(const at::Tensor& tensor, at::ScalarType type);

/// Copies `staged` back into `tensor` when it is a staging copy.
void Unstage(const at::Tensor& staged, at::Tensor& tensor);

/// Turns the sum `sum` over `world_size` ranks into their mean (integers truncate).
void DivideForMean(at::Tensor& sum, int world_size);

/// A host-memory all-reduce around `sum`, which replaces a contiguous CPU buffer of `type` by
/// its sum over the ranks: `tensor` is staged into such a buffer, summed, divided for kMean
/// and copied back. An empty tensor is left as it is.
void AllreduceStaged(at::Tensor& tensor, at::ScalarType type, ReduceOp op, int world_size,
                     const std::function<void(at::Tensor&)>& sum);

}  // namespace est::distribute::detail
