#pragma once
/// The NCCL element types in which the NCCL collective carries LibTorch dtypes.

#include <c10/core/ScalarType.h>

#include <cstddef>

#include "distribute/collective/nccl/nccl_types.h"

namespace est::distribute {

/// The NCCL type in which all-reduce sums tensors of `type`: float32, float64, float16,
/// bfloat16, int32 or int64. Throws ConfigError naming `type` and those otherwise.
NcclDataType NcclReduceType(c10::ScalarType type);

/// How NCCL copies `numel` elements of a dtype in broadcast and all-gather.
struct NcclPayload {
  /// The dtype's own NCCL type when it has one, else kUInt8 (bytes).
  NcclDataType type;
  /// Elements of `type`: `numel`, or the bytes of `numel` elements.
  size_t count;
};

/// The payload of `numel` elements of `type`; every dtype can be copied.
NcclPayload NcclCopyPayload(c10::ScalarType type, size_t numel);

}  // namespace est::distribute
