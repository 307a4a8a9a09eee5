#pragma once
/// The element types and reductions of the NCCL core, and their NCCL counterparts.

#include <nccl.h>

#include <cstddef>

namespace est::distribute {

/// Element type of a device buffer: the dtypes of the collectives' tests, and bytes (kUInt8),
/// in which broadcast and all-gather carry any other type.
enum class NcclDataType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8 };

/// How allreduce combines the ranks' buffers.
enum class NcclReduceOp { kSum, kMean };

/// NCCL's data type for `type`.
ncclDataType_t ToNcclDataType(NcclDataType type);
/// NCCL's reduction for `op`: kMean is ncclAvg, which NCCL's documentation defines as the sum
/// divided by the number of ranks without saying how integers round.
ncclRedOp_t ToNcclRedOp(NcclReduceOp op);
/// Bytes per element of `type`.
size_t NcclElementSize(NcclDataType type);
/// The type's name in messages: "float32", "bfloat16", "int64", "uint8".
const char* NcclTypeName(NcclDataType type);
/// The reduction's name in messages: "sum", "mean".
const char* NcclOpName(NcclReduceOp op);

}  // namespace est::distribute
