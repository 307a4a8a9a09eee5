#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/cluster/cluster_resolver.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

namespace {

using Variables = std::map<std::string, std::string>;

std::optional<ClusterConfig> Resolve(const Variables& variables) {
  return SlurmClusterResolver(EnvironmentOf(variables))->resolve();
}

}  // namespace

TEST_CASE("SlurmClusterResolver reads a Slurm task's variables", "[distribute]") {
  const Variables slurm = {
      {"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODELIST", "node[03-05,09],gpu7"}};
  SECTION("present only when SLURM_PROCID and SLURM_NTASKS are set") {
    CHECK(SlurmClusterResolver(EnvironmentOf({}))->name() == "slurm");
    CHECK_FALSE(Resolve({}).has_value());
    CHECK_FALSE(Resolve({{"SLURM_PROCID", "0"}, {"SLURM_NODELIST", "n1"}}).has_value());
    CHECK_FALSE(Resolve({{"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n1"}}).has_value());
  }
  SECTION("the first node runs the chief, at port 29500 by default") {
    std::optional<ClusterConfig> config = Resolve(slurm);
    REQUIRE(config.has_value());
    CHECK(config->source == "slurm");
    CHECK(config->task_type == TaskType::kWorker);
    CHECK(config->task_id == 5);
    CHECK(config->rank == 5);
    CHECK(config->local_rank == 1);
    CHECK_FALSE(config->is_chief);
    CHECK(config->num_worker_replicas == 8);
    CHECK(config->chief_address == "node03:29500");
    CHECK(config->task_address.empty());
    CHECK(config->cluster.at("worker").size() == 8);
  }
  SECTION("MASTER_PORT sets the port; SLURM_JOB_NODELIST stands in for SLURM_NODELIST") {
    Variables variables = slurm;
    variables.erase("SLURM_NODELIST");
    variables["SLURM_JOB_NODELIST"] = "gpu[12-13]";
    variables["MASTER_PORT"] = "12345";
    variables["SLURM_PROCID"] = "0";
    variables.erase("SLURM_LOCALID");
    std::optional<ClusterConfig> config = Resolve(variables);
    REQUIRE(config.has_value());
    CHECK(config->chief_address == "gpu12:12345");
    CHECK(config->task_address == "gpu12:12345");
    CHECK(config->is_chief);
    CHECK(config->local_rank == 0);
  }
  SECTION("inside a job without MASTER_PORT, the port is 15000 + the job id's last four digits") {
    Variables variables = slurm;
    variables["SLURM_JOB_ID"] = "4817263";
    CHECK(Resolve(variables)->chief_address == "node03:22263");
    variables["SLURM_JOB_ID"] = "42";
    CHECK(Resolve(variables)->chief_address == "node03:15042");
    variables["MASTER_PORT"] = "29511";
    CHECK(Resolve(variables)->chief_address == "node03:29511");
  }
  SECTION("a job script's MASTER_ADDR wins over the node list") {
    Variables variables = slurm;
    variables["MASTER_ADDR"] = "10.1.2.3";
    CHECK(Resolve(variables)->chief_address == "10.1.2.3:29500");
    variables["MASTER_ADDR"] = "";
    CHECK(Resolve(variables)->chief_address == "node03:29500");
  }
}

TEST_CASE("SlurmClusterResolver names the malformed variable and its value", "[distribute]") {
  const Variables slurm = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n[1-2]"}};
  struct Case {
    std::string variable;
    std::optional<std::string> value;  // nullopt: unset
    std::vector<std::string> quoted;
  };
  const std::vector<Case> cases = {
      {"SLURM_PROCID", "x", {"SLURM_PROCID=\"x\""}},
      {"SLURM_PROCID", "2", {"SLURM_PROCID=\"2\"", "SLURM_NTASKS=\"2\""}},
      {"SLURM_NTASKS", "0", {"SLURM_NTASKS=\"0\""}},
      {"SLURM_LOCALID", "-1", {"SLURM_LOCALID=\"-1\""}},
      {"SLURM_NODELIST", std::nullopt, {"neither SLURM_NODELIST nor SLURM_JOB_NODELIST"}},
      {"SLURM_NODELIST", "n[1-2", {"SLURM_NODELIST", "\"n[1-2\""}},
      {"SLURM_NODELIST", "", {"SLURM_NODELIST", "empty"}},
      {"MASTER_PORT", "70000", {"MASTER_PORT=\"70000\""}},
      {"SLURM_JOB_ID", "12x", {"SLURM_JOB_ID=\"12x\""}},
      {"MASTER_ADDR", "node 1", {"MASTER_ADDR=\"node 1\""}},
  };
  for (const Case& c : cases) {
    Variables variables = slurm;
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
