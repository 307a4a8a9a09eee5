#include "distribute/collective/nccl/nccl_tensor_type.h"

#include <optional>

#include "common/error.h"

namespace est::distribute {
namespace {

std::optional<NcclDataType> OwnType(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float: return NcclDataType::kFloat32;
    case c10::ScalarType::Double: return NcclDataType::kFloat64;
    case c10::ScalarType::Half: return NcclDataType::kFloat16;
    case c10::ScalarType::BFloat16: return NcclDataType::kBFloat16;
    case c10::ScalarType::Int: return NcclDataType::kInt32;
    case c10::ScalarType::Long: return NcclDataType::kInt64;
    default: return std::nullopt;
  }
}

}  // namespace

NcclDataType NcclReduceType(c10::ScalarType type) {
  const std::optional<NcclDataType> own = OwnType(type);
  EST_CHECK(own.has_value(), ConfigError, "NCCL allreduce: unsupported dtype ", c10::toString(type),
            "; supported: float32, float64, float16, bfloat16, int32, int64");
  return *own;
}

NcclPayload NcclCopyPayload(c10::ScalarType type, size_t numel) {
  if (const std::optional<NcclDataType> own = OwnType(type)) return NcclPayload{*own, numel};
  return NcclPayload{NcclDataType::kUInt8, numel * c10::elementSize(type)};
}

}  // namespace est::distribute
