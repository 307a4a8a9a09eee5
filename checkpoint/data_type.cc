#include "checkpoint/data_type.h"

#include <array>
#include <utility>

#include "checkpoint/data_type.pb.h"

namespace est::checkpoint {
namespace {

constexpr std::array<std::pair<at::ScalarType, proto::DataType>, 12> kDataTypes = {{
    {at::kFloat, proto::DT_FLOAT},
    {at::kDouble, proto::DT_DOUBLE},
    {at::kHalf, proto::DT_HALF},
    {at::kBFloat16, proto::DT_BFLOAT16},
    {at::kChar, proto::DT_INT8},
    {at::kShort, proto::DT_INT16},
    {at::kInt, proto::DT_INT32},
    {at::kLong, proto::DT_INT64},
    {at::kByte, proto::DT_UINT8},
    {at::kBool, proto::DT_BOOL},
    {at::kComplexFloat, proto::DT_COMPLEX64},
    {at::kComplexDouble, proto::DT_COMPLEX128},
}};

}  // namespace

std::optional<int> DataTypeNumber(at::ScalarType type) {
  for (const auto& [scalar_type, data_type] : kDataTypes) {
    if (scalar_type == type) return data_type;
  }
  return std::nullopt;
}

std::optional<at::ScalarType> ScalarTypeOf(int data_type_number) {
  for (const auto& [scalar_type, data_type] : kDataTypes) {
    if (data_type == data_type_number) return scalar_type;
  }
  return std::nullopt;
}

}  // namespace est::checkpoint
