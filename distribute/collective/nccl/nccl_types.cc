#include "distribute/collective/nccl/nccl_types.h"

#include "common/error.h"

namespace est::distribute {

ncclDataType_t ToNcclDataType(NcclDataType type) {
  switch (type) {
    case NcclDataType::kFloat32: return ncclFloat32;
    case NcclDataType::kFloat64: return ncclFloat64;
    case NcclDataType::kFloat16: return ncclFloat16;
    case NcclDataType::kBFloat16: return ncclBfloat16;
    case NcclDataType::kInt32: return ncclInt32;
    case NcclDataType::kInt64: return ncclInt64;
    case NcclDataType::kUInt8: return ncclUint8;
  }
  EST_THROW(ConfigError, "NCCL: unknown data type ", static_cast<int>(type),
            "; expected float32, float64, float16, bfloat16, int32, int64 or uint8");
}

ncclRedOp_t ToNcclRedOp(NcclReduceOp op) {
  switch (op) {
    case NcclReduceOp::kSum: return ncclSum;
    case NcclReduceOp::kMean: return ncclAvg;
  }
  EST_THROW(ConfigError, "NCCL: unknown reduction ", static_cast<int>(op), "; expected sum or mean");
}

size_t NcclElementSize(NcclDataType type) {
  switch (type) {
    case NcclDataType::kFloat32: return 4;
    case NcclDataType::kFloat64: return 8;
    case NcclDataType::kFloat16: return 2;
    case NcclDataType::kBFloat16: return 2;
    case NcclDataType::kInt32: return 4;
    case NcclDataType::kInt64: return 8;
    case NcclDataType::kUInt8: return 1;
  }
  EST_THROW(ConfigError, "NCCL: unknown data type ", static_cast<int>(type),
            "; expected float32, float64, float16, bfloat16, int32, int64 or uint8");
}

const char* NcclTypeName(NcclDataType type) {
  switch (type) {
    case NcclDataType::kFloat32: return "float32";
    case NcclDataType::kFloat64: return "float64";
    case NcclDataType::kFloat16: return "float16";
    case NcclDataType::kBFloat16: return "bfloat16";
    case NcclDataType::kInt32: return "int32";
    case NcclDataType::kInt64: return "int64";
    case NcclDataType::kUInt8: return "uint8";
  }
  return "unknown data type";
}

const char* NcclOpName(NcclReduceOp op) {
  switch (op) {
    case NcclReduceOp::kSum: return "sum";
    case NcclReduceOp::kMean: return "mean";
  }
  return "unknown reduction";
}

}  // namespace est::distribute
