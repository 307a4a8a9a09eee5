#include "distribute/collective/nccl/nccl_tensor_type.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/test_util.h"

namespace est::distribute {
namespace {

using testing::MessageMatches;

TEST_CASE("NCCL all-reduces the Collective's six dtypes in their own NCCL types", "[distribute][nccl]") {
  CHECK(NcclReduceType(c10::ScalarType::Float) == NcclDataType::kFloat32);
  CHECK(NcclReduceType(c10::ScalarType::Double) == NcclDataType::kFloat64);
  CHECK(NcclReduceType(c10::ScalarType::Half) == NcclDataType::kFloat16);
  CHECK(NcclReduceType(c10::ScalarType::BFloat16) == NcclDataType::kBFloat16);
  CHECK(NcclReduceType(c10::ScalarType::Int) == NcclDataType::kInt32);
  CHECK(NcclReduceType(c10::ScalarType::Long) == NcclDataType::kInt64);
}

TEST_CASE("NCCL all-reduce of another dtype is a ConfigError naming it", "[distribute][nccl]") {
  for (c10::ScalarType type : {c10::ScalarType::Bool, c10::ScalarType::Byte, c10::ScalarType::Char,
                               c10::ScalarType::Short, c10::ScalarType::ComplexFloat}) {
    CAPTURE(c10::toString(type));
    CHECK_THROWS_MATCHES(
        NcclReduceType(type), ConfigError,
        MessageMatches(Catch::Contains(std::string("unsupported dtype ") + c10::toString(type)) &&
                       Catch::Contains("supported: float32, float64, float16, bfloat16, int32, int64")));
  }
}

TEST_CASE("NCCL copies every dtype: its own type when it has one, else its bytes", "[distribute][nccl]") {
  struct Case {
    c10::ScalarType type;
    size_t numel;
    NcclDataType carried_as;
    size_t count;
  };
  const Case cases[] = {{c10::ScalarType::Float, 10, NcclDataType::kFloat32, 10},
                        {c10::ScalarType::Half, 3, NcclDataType::kFloat16, 3},
                        {c10::ScalarType::Long, 2, NcclDataType::kInt64, 2},
                        {c10::ScalarType::Bool, 5, NcclDataType::kUInt8, 5},
                        {c10::ScalarType::ComplexDouble, 3, NcclDataType::kUInt8, 48},
                        {c10::ScalarType::Short, 0, NcclDataType::kUInt8, 0}};
  for (const Case& c : cases) {
    CAPTURE(c10::toString(c.type), c.numel);
    const NcclPayload payload = NcclCopyPayload(c.type, c.numel);
    CHECK(payload.type == c.carried_as);
    CHECK(payload.count == c.count);
  }
}

}  // namespace
}  // namespace est::distribute
