#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/cluster/cluster_resolver.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace cluster_torchrun_test {
using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

namespace {

using Variables = std::map<std::string, std::string>;

std::optional<ClusterConfig> Resolve(const Variables& variables) {
  return TorchrunClusterResolver(EnvironmentOf(variables))->resolve();
}

}  // namespace

TEST_CASE("TorchrunClusterResolver reads torchrun's variables", "[distribute]") {
  const Variables torchrun = {
      {"RANK", "1"}, {"WORLD_SIZE", "3"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29400"}};
  SECTION("present only when RANK or WORLD_SIZE is set") {
    CHECK(TorchrunClusterResolver(EnvironmentOf({}))->name() == "torchrun");
    CHECK_FALSE(Resolve({}).has_value());
    CHECK_FALSE(Resolve({{"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29400"}}).has_value());
  }
  SECTION("a worker") {
    std::optional<ClusterConfig> config = Resolve(torchrun);
    REQUIRE(config.has_value());
    CHECK(config->source == "torchrun");
    CHECK(config->task_type == TaskType::kWorker);
    CHECK(config->task_id == 1);
    CHECK(config->rank == 1);
    CHECK(config->global_id_in_cluster == 1);
    CHECK(config->local_rank == 1);
    CHECK_FALSE(config->is_chief);
    CHECK(config->num_worker_replicas == 3);
    CHECK(config->chief_address == "10.0.0.5:29400");
    CHECK(config->task_address.empty());
    CHECK(config->cluster == ClusterSpec{{"worker", {"10.0.0.5:29400", "", ""}}});
  }
  SECTION("rank 0 is the chief, at MASTER_ADDR:MASTER_PORT; LOCAL_RANK is optional") {
    Variables variables = torchrun;
    variables["RANK"] = "0";
    variables.erase("LOCAL_RANK");
    std::optional<ClusterConfig> config = Resolve(variables);
    REQUIRE(config.has_value());
    CHECK(config->is_chief);
    CHECK(config->rank == 0);
    CHECK(config->local_rank == 0);
    CHECK(config->task_address == "10.0.0.5:29400");
    CHECK(config->task_host() == "10.0.0.5");
  }
  SECTION("an IPv6 MASTER_ADDR") {
    Variables variables = torchrun;
    variables["MASTER_ADDR"] = "::1";
    CHECK(Resolve(variables)->chief_address == "[::1]:29400");
  }
}

TEST_CASE("TorchrunClusterResolver names the malformed variable and its value", "[distribute]") {
  const Variables torchrun = {{"RANK", "1"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29400"}};
  struct Case {
    std::string variable;
    std::optional<std::string> value;  // nullopt: unset
    std::vector<std::string> quoted;
  };
  const std::vector<Case> cases = {
      {"RANK", std::nullopt, {"RANK", "not set"}},
      {"WORLD_SIZE", std::nullopt, {"WORLD_SIZE", "not set"}},
      {"RANK", "one", {"RANK=\"one\"", "not an integer"}},
      {"RANK", "", {"RANK=\"\""}},
      {"RANK", "-1", {"RANK=\"-1\""}},
      {"RANK", "3", {"RANK=\"3\"", "WORLD_SIZE=\"3\""}},
      {"WORLD_SIZE", "0", {"WORLD_SIZE=\"0\""}},
      {"WORLD_SIZE", "2.5", {"WORLD_SIZE=\"2.5\""}},
      {"LOCAL_RANK", "x", {"LOCAL_RANK=\"x\""}},
      {"MASTER_ADDR", std::nullopt, {"MASTER_ADDR", "not set"}},
      {"MASTER_ADDR", "", {"MASTER_ADDR", "not set"}},
      {"MASTER_ADDR", "h:1234", {"MASTER_ADDR=\"h:1234\""}},
      {"MASTER_ADDR", "my host", {"MASTER_ADDR=\"my host\""}},
      {"MASTER_PORT", std::nullopt, {"MASTER_PORT", "not set"}},
      {"MASTER_PORT", "99999", {"MASTER_PORT=\"99999\""}},
      {"MASTER_PORT", "http", {"MASTER_PORT=\"http\""}},
      {"MASTER_PORT", "0", {"MASTER_PORT=\"0\""}},
      // Bounded at once, as est-launch bounds its tasks: not a rendezvous of a million ranks.
      {"WORLD_SIZE", "1000000", {"world size 1000000 (torchrun) exceeds the 65536 training tasks a job may have"}},
  };
  for (const Case& c : cases) {
    Variables variables = torchrun;
    if (c.value) {
      variables[c.variable] = *c.value;
    } else {
      variables.erase(c.variable);
    }
    for (const std::string& part : c.quoted) {
      CAPTURE(c.variable, c.value, part);
      CHECK_THROWS_MATCHES(Resolve(variables), ConfigError, MessageMatches(Catch::Contains(part)));
    }
  }
}

}  // namespace cluster_torchrun_test
