#include "distribute/collective/nccl/nccl_types.h"

#include <catch2/catch.hpp>

#include <cstring>

#include "common/error.h"

namespace est::distribute {
namespace {

TEST_CASE("NCCL data types map to NCCL's, with their element sizes and names", "[distribute][nccl]") {
  CHECK(ToNcclDataType(NcclDataType::kFloat32) == ncclFloat32);
  CHECK(ToNcclDataType(NcclDataType::kFloat64) == ncclFloat64);
  CHECK(ToNcclDataType(NcclDataType::kFloat16) == ncclFloat16);
  CHECK(ToNcclDataType(NcclDataType::kBFloat16) == ncclBfloat16);
  CHECK(ToNcclDataType(NcclDataType::kInt32) == ncclInt32);
  CHECK(ToNcclDataType(NcclDataType::kInt64) == ncclInt64);
  CHECK(ToNcclDataType(NcclDataType::kUInt8) == ncclUint8);

  CHECK(NcclElementSize(NcclDataType::kFloat32) == 4);
  CHECK(NcclElementSize(NcclDataType::kFloat64) == 8);
  CHECK(NcclElementSize(NcclDataType::kFloat16) == 2);
  CHECK(NcclElementSize(NcclDataType::kBFloat16) == 2);
  CHECK(NcclElementSize(NcclDataType::kInt32) == 4);
  CHECK(NcclElementSize(NcclDataType::kInt64) == 8);
  CHECK(NcclElementSize(NcclDataType::kUInt8) == 1);

  CHECK(std::strcmp(NcclTypeName(NcclDataType::kBFloat16), "bfloat16") == 0);
  CHECK(std::strcmp(NcclTypeName(NcclDataType::kInt64), "int64") == 0);
  CHECK(std::strcmp(NcclTypeName(NcclDataType::kUInt8), "uint8") == 0);
}

TEST_CASE("NCCL reductions: sum is ncclSum, mean is ncclAvg", "[distribute][nccl]") {
  CHECK(ToNcclRedOp(NcclReduceOp::kSum) == ncclSum);
  CHECK(ToNcclRedOp(NcclReduceOp::kMean) == ncclAvg);
  CHECK(std::strcmp(NcclOpName(NcclReduceOp::kMean), "mean") == 0);
}

TEST_CASE("NCCL mapping rejects values outside the enums with ConfigError", "[distribute][nccl]") {
  CHECK_THROWS_WITH(ToNcclDataType(static_cast<NcclDataType>(42)),
                    Catch::Contains("unknown data type 42") && Catch::Contains("expected float32"));
  CHECK_THROWS_AS(NcclElementSize(static_cast<NcclDataType>(42)), ConfigError);
  CHECK_THROWS_WITH(ToNcclRedOp(static_cast<NcclReduceOp>(7)), Catch::Contains("unknown reduction 7"));
}

}  // namespace
}  // namespace est::distribute
