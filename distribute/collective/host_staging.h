#pragma once
/// What the host-memory collectives (Gloo, shared memory) share: the type each dtype is
/// summed in, staging a tensor into a contiguous CPU buffer of that type and back, and the
/// division that turns a sum into a mean.

#include <ATen/core/Tensor.h>

#include <string>

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

}  // namespace est::distribute::detail
