#include "distribute/input_context.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using est::ConfigError;
using est::distribute::InputContext;

TEST_CASE("InputContext defaults to one pipeline and one replica", "[distribute]") {
  InputContext ctx;
  CHECK(ctx.num_input_pipelines() == 1);
  CHECK(ctx.input_pipeline_id() == 0);
  CHECK(ctx.num_replicas_in_sync() == 1);
  CHECK(ctx.per_replica_batch_size(64) == 64);
}

TEST_CASE("per_replica_batch_size divides the global batch", "[distribute]") {
  InputContext ctx(2, 1, 4);
  CHECK(ctx.per_replica_batch_size(64) == 16);
  CHECK_THROWS_WITH(ctx.per_replica_batch_size(66),
                    Catch::Contains("global batch size 66 (the value input_fn passed; est-train's --batch-size) is "
                                    "not divisible by the 4 replicas in sync") &&
                        Catch::EndsWith("use a multiple of 4, such as 64 or 68"));
  CHECK_THROWS_WITH(ctx.per_replica_batch_size(3), Catch::EndsWith("use a multiple of 4, such as 4"));
  CHECK_THROWS_AS(ctx.per_replica_batch_size(0), ConfigError);
}

TEST_CASE("InputContext rejects inconsistent counts", "[distribute]") {
  CHECK_THROWS_WITH(InputContext(2, 2, 1), Catch::Contains("input_pipeline_id"));
  CHECK_THROWS_AS(InputContext(0, 0, 1), ConfigError);
  CHECK_THROWS_AS(InputContext(1, -1, 1), ConfigError);
  CHECK_THROWS_AS(InputContext(1, 0, 0), ConfigError);
}
