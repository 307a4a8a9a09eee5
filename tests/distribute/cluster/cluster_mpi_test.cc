#include <map>
#include <string>

#include "common/error.h"
#include "distribute/cluster/cluster_resolver.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

namespace cluster_mpi_test {
namespace {

using Variables = std::map<std::string, std::string>;

std::optional<ClusterConfig> Resolve(const Variables& variables) {
  return MpiClusterResolver(EnvironmentOf(variables))->resolve();
}

// What Open MPI's mpirun -np 4 on two hosts gives rank 3, and MPICH's mpiexec -n 2 on one host rank 1.
const Variables kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_SIZE", "4"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                            {"PMIX_RANK", "3"},
                            {"MASTER_ADDR", "node0"}};
const Variables kHydra = {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}};

}  // namespace

TEST_CASE("MpiClusterResolver reads Open MPI's and MPICH's variables", "[distribute]") {
  SECTION("present only when OMPI_COMM_WORLD_RANK, or PMI_RANK and PMI_SIZE, are set") {
    CHECK(MpiClusterResolver(EnvironmentOf({}))->name() == "mpi");
    CHECK_FALSE(Resolve({}).has_value());
    CHECK_FALSE(Resolve({{"PMIX_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}).has_value());
    CHECK_FALSE(Resolve({{"PMI_RANK", "0"}, {"SLURM_PROCID", "0"}}).has_value());
  }
  SECTION("Open MPI: rank 0 at MASTER_ADDR, port 29500 by default") {
    std::optional<ClusterConfig> config = Resolve(kOpenMpi);
    REQUIRE(config.has_value());
    CHECK(config->source == "mpi");
    CHECK(config->task_type == TaskType::kWorker);
    CHECK(config->task_id == 3);
    CHECK(config->rank == 3);
    CHECK(config->local_rank == 1);
    CHECK(config->num_worker_replicas == 4);
    CHECK_FALSE(config->is_chief);
    CHECK(config->chief_address == "node0:29500");
  }
  SECTION("MPICH's Hydra, every rank on this host: the chief at 127.0.0.1, MASTER_PORT") {
    Variables variables = kHydra;
    variables["MASTER_PORT"] = "4242";
    std::optional<ClusterConfig> config = Resolve(variables);
    REQUIRE(config.has_value());
    CHECK(config->rank == 1);
    CHECK(config->local_rank == 1);
    CHECK(config->num_worker_replicas == 2);
    CHECK(config->chief_address == "127.0.0.1:4242");
  }
  SECTION("Cray MPICH's local rank and size") {
    std::optional<ClusterConfig> config =
        Resolve({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"PMI_LOCAL_RANK", "0"}, {"PMI_LOCAL_SIZE", "2"},
                 {"MASTER_ADDR", "nid001"}});
    REQUIRE(config.has_value());
    CHECK(config->rank == 2);
    CHECK(config->local_rank == 0);
    CHECK(config->chief_address == "nid001:29500");
  }
  SECTION("mpirun in a Slurm allocation without MASTER_ADDR: the allocation's first host") {
    Variables variables = kOpenMpi;
    variables.erase("MASTER_ADDR");
    variables["SLURM_JOB_NODELIST"] = "gpu[07-08]";
    std::optional<ClusterConfig> config = Resolve(variables);
    REQUIRE(config.has_value());
    CHECK(config->chief_address == "gpu07:29500");
  }
  SECTION("ranks on several hosts without MASTER_ADDR are refused, naming what to set") {
    Variables variables = kOpenMpi;
    variables.erase("MASTER_ADDR");
    CHECK_THROWS_MATCHES(Resolve(variables), ConfigError,
                         MessageMatches(Catch::Contains("the 4 MPI ranks do not all run on this host") &&
                                        Catch::Contains("OMPI_COMM_WORLD_LOCAL_SIZE=\"2\"") &&
                                        Catch::Contains("mpirun -x MASTER_ADDR=<host>")));
  }
  SECTION("malformed or disagreeing variables are refused, naming them") {
    Variables variables = kOpenMpi;
    variables.erase("OMPI_COMM_WORLD_SIZE");
    CHECK_THROWS_MATCHES(Resolve(variables), ConfigError, MessageMatches(Catch::Contains("OMPI_COMM_WORLD_SIZE")));
    variables = kOpenMpi;
    variables["OMPI_COMM_WORLD_RANK"] = "4";
    CHECK_THROWS_MATCHES(Resolve(variables), ConfigError,
                         MessageMatches(Catch::Contains("OMPI_COMM_WORLD_RANK=\"4\" is not below OMPI_COMM_WORLD_SIZE=\"4\"")));
    variables = kOpenMpi;
    variables["PMIX_RANK"] = "0";
    CHECK_THROWS_MATCHES(Resolve(variables), ConfigError,
                         MessageMatches(Catch::Contains("OMPI_COMM_WORLD_RANK=\"3\" and PMIX_RANK=\"0\" give this "
                                                        "process different MPI ranks")));
    variables = kHydra;
    variables["PMI_SIZE"] = "two";
    CHECK_THROWS_MATCHES(Resolve(variables), ConfigError,
                         MessageMatches(Catch::Contains("PMI_SIZE") && Catch::Contains("\"two\"")));
    variables = kHydra;
    variables["MASTER_ADDR"] = "bad host";
    CHECK_THROWS_MATCHES(Resolve(variables), ConfigError, MessageMatches(Catch::Contains("MASTER_ADDR=\"bad host\"")));
  }
}

}  // namespace cluster_mpi_test
