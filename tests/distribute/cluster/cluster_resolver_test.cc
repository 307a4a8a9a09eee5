#include "distribute/cluster/cluster_resolver.h"

#include <map>
#include <string>

#include "common/error.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

namespace {

const std::map<std::string, std::string> kTfConfig = {
    {"TF_CONFIG", R"({"cluster": {"worker": ["tf0:1", "tf1:1"]}, "task": {"type": "worker", "index": 1}})"}};
const std::map<std::string, std::string> kTorchrun = {
    {"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "torch0"}, {"MASTER_PORT", "29400"}};
const std::map<std::string, std::string> kSlurm = {
    {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "6"}, {"SLURM_NODELIST", "slurm[0-1]"}};
const std::map<std::string, std::string> kMpi = {{"OMPI_COMM_WORLD_RANK", "1"},
                                                 {"OMPI_COMM_WORLD_SIZE", "2"},
                                                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};

/// The union of variable sets.
Environment Merged(std::initializer_list<std::map<std::string, std::string>> sets) {
  std::map<std::string, std::string> variables;
  for (const auto& set : sets) variables.insert(set.begin(), set.end());
  return EnvironmentOf(variables);
}

}  // namespace

TEST_CASE("TfConfigClusterResolver reads TF_CONFIG when it is set and not empty", "[distribute]") {
  CHECK(TfConfigClusterResolver(EnvironmentOf({}))->name() == "TF_CONFIG");
  CHECK_FALSE(TfConfigClusterResolver(EnvironmentOf({}))->resolve().has_value());
  CHECK_FALSE(TfConfigClusterResolver(EnvironmentOf({{"TF_CONFIG", ""}}))->resolve().has_value());
  std::optional<ClusterConfig> config = TfConfigClusterResolver(EnvironmentOf(kTfConfig))->resolve();
  REQUIRE(config.has_value());
  CHECK(config->chief_address == "tf0:1");
  CHECK(config->rank == 1);
  CHECK(config->source == "TF_CONFIG");
  CHECK_THROWS_MATCHES(TfConfigClusterResolver(EnvironmentOf({{"TF_CONFIG", "{"}}))->resolve(), ConfigError,
                       MessageMatches(Catch::Contains("TF_CONFIG") && Catch::Contains("\"{\"")));
}

TEST_CASE("ResolveCluster: explicit, then TF_CONFIG, then torchrun, then MPI, then Slurm, then local", "[distribute]") {
  const std::string explicit_config =
      R"({"cluster": {"chief": ["flag0:1"], "worker": ["flag1:1"]}, "task": {"type": "chief", "index": 0}})";
  SECTION("an explicit TF_CONFIG wins over every variable") {
    ClusterConfig config = ResolveCluster(explicit_config, Merged({kTfConfig, kTorchrun, kSlurm}));
    CHECK(config.source == "explicit");
    CHECK(config.chief_address == "flag0:1");
    CHECK(config.is_chief);
  }
  SECTION("TF_CONFIG wins over torchrun and Slurm") {
    ClusterConfig config = ResolveCluster("", Merged({kTfConfig, kTorchrun, kSlurm}));
    CHECK(config.source == "TF_CONFIG");
    CHECK(config.chief_address == "tf0:1");
  }
  SECTION("torchrun wins over Slurm; an empty TF_CONFIG is not set") {
    ClusterConfig config = ResolveCluster("", Merged({{{"TF_CONFIG", ""}}, kTorchrun, kSlurm}));
    CHECK(config.source == "torchrun");
    CHECK(config.rank == 2);
    CHECK(config.chief_address == "torch0:29400");
  }
  SECTION("MPI wins over Slurm: mpirun's ranks in an allocation inherit the batch step's variables") {
    est::testing::LogCapture log;
    ClusterConfig config = ResolveCluster("", Merged({kMpi, kSlurm}));
    CHECK(config.source == "mpi");
    CHECK(config.rank == 1);
    CHECK(config.chief_address == "127.0.0.1:29500");
    CHECK_THAT(log.text(), Catch::Contains("and slurm's variables (task worker:3, rank 3 of 6, chief at "
                                           "slurm0:29500) describe different clusters; mpi wins"));
  }
  SECTION("Slurm") {
    ClusterConfig config = ResolveCluster("", Merged({kSlurm}));
    CHECK(config.source == "slurm");
    CHECK(config.rank == 3);
    CHECK(config.chief_address == "slurm0:29500");
  }
  SECTION("nothing set is a local run") {
    ClusterConfig config = ResolveCluster("", EnvironmentOf({}));
    CHECK(config.is_local());
    CHECK(config.source == "local");
    CHECK(config.is_chief);
    CHECK(config.num_worker_replicas == 1);
  }
  SECTION("a TF_CONFIG without a cluster is a local run, and still wins") {
    ClusterConfig config = ResolveCluster("", Merged({{{"TF_CONFIG", "{}"}}, kTorchrun}));
    CHECK(config.is_local());
    CHECK(config.source == "TF_CONFIG");
    CHECK(ResolveCluster("{}", EnvironmentOf({})).source == "explicit");
  }
  SECTION("only the source used is read, and its errors are thrown") {
    CHECK(ResolveCluster("", Merged({kTfConfig, {{"RANK", "x"}, {"WORLD_SIZE", "2"}}})).source == "TF_CONFIG");
    CHECK_THROWS_MATCHES(ResolveCluster("", Merged({{{"TF_CONFIG", "[]"}}, kTorchrun})), ConfigError,
                         MessageMatches(Catch::Contains("TF_CONFIG")));
    CHECK_THROWS_MATCHES(ResolveCluster("", Merged({{{"RANK", "9"}}, kSlurm})), ConfigError,
                         MessageMatches(Catch::Contains("WORLD_SIZE")));
    CHECK_THROWS_MATCHES(ResolveCluster("{\"task\": 1}", EnvironmentOf({})), ConfigError,
                         MessageMatches(Catch::Contains("\"task\"")));
  }
}

TEST_CASE("ResolveCluster warns when TF_CONFIG and torchrun's variables disagree, naming the one that wins",
          "[distribute]") {
  est::testing::LogCapture log;
  const ClusterConfig config = ResolveCluster("", Merged({kTfConfig, kTorchrun}));
  CHECK(config.source == "TF_CONFIG");
  CHECK_THAT(log.text(),
             Catch::Contains("warning: TF_CONFIG (task worker:1, rank 1 of 2, chief at tf0:1) and torchrun's variables "
                             "(task worker:2, rank 2 of 4, chief at torch0:29400) describe different clusters; "
                             "TF_CONFIG wins"));
  // Sources that agree, or a lone source, say nothing.
  est::testing::LogCapture quiet;
  ResolveCluster("", Merged({kTfConfig, {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "tf0"},
                                         {"MASTER_PORT", "1"}}}));
  ResolveCluster("", Merged({kTorchrun}));
  CHECK(quiet.text().find("warning") == std::string::npos);
}
