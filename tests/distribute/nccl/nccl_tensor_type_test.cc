#include "distribute/nccl/nccl_tensor_type.h"

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
    CHECK_THROWS_MATCHES(NcclReduceType(type), ConfigError,
                         MessageMatches(Catch::Contains(std::string("unsupported dtype ") + c10::toString(type)) &&
                                        Catch::Contains("supported: float32, float64, float16, bfloat16, int32, int64")));
  }
}

TEST_CASE("NCCL copies every dtype: its own type when it has one, else its bytes", "[distribute][nccl]") {
  const NcclPayload floats = NcclCopyPayload(c10::ScalarType::Float, 10);
  CHECK(floats.type == NcclDataType::kFloat32);
  CHECK(floats.count == 10);
  const NcclPayload halves = NcclCopyPayload(c10::ScalarType::Half, 3);
  CHECK(halves.type == NcclDataType::kFloat16);
  CHECK(halves.count == 3);
  const NcclPayload flags = NcclCopyPayload(c10::ScalarType::Bool, 5);
  CHECK(flags.type == NcclDataType::kUInt8);
  CHECK(flags.count == 5);
  const NcclPayload complex = NcclCopyPayload(c10::ScalarType::ComplexDouble, 3);
  CHECK(complex.type == NcclDataType::kUInt8);
  CHECK(complex.count == 48);
  const NcclPayload shorts = NcclCopyPayload(c10::ScalarType::Short, 0);
  CHECK(shorts.type == NcclDataType::kUInt8);
  CHECK(shorts.count == 0);
}

}  // namespace
}  // namespace est::distribute
