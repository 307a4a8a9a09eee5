// CreateNcclCollective in a build without the NCCL collective. Builds with it test the real
// one in tests/distribute/collective/nccl/nccl_collective_test.cc.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include "common/config.h"
#include "common/error.h"
#include "distribute/collective/nccl/nccl_collective.h"
#include "distribute/rendezvous/store.h"
#include "tests/test_util.h"

#if !(EST_WITH_NCCL && EST_WITH_CUDA)

namespace est::distribute {
namespace {

using testing::MessageMatches;

TEST_CASE("CreateNcclCollective in a build without NCCL throws ConfigError naming the build flags", "[distribute]") {
  CHECK_THROWS_MATCHES(CreateNcclCollective(nullptr, 0, 1, c10::Device("cuda:0")), ConfigError,
                       MessageMatches(Catch::Contains("NCCL collective of rank 0 of 1 on cuda:0") &&
                                      Catch::Contains("this build has no NCCL collective") &&
                                      Catch::Contains("EST_WITH_NCCL=0") && Catch::Contains("EST_WITH_CUDA=") &&
                                      Catch::Contains("use the Gloo collective")));
  CHECK_THROWS_AS(CreateNcclCollective(CreateInMemoryStore(), 1, 2, c10::Device("cuda:1")), ConfigError);
}

}  // namespace
}  // namespace est::distribute

#endif
