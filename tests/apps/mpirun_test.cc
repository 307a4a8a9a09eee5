// est-train started by Open MPI's mpirun, which sets no TF_CONFIG: each rank finds its place in
// mpirun's variables (MpiClusterResolver) and trains as the same workers under est-launch do.


#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "tests/apps/run_command.h"
#include "tests/checkpoint_difference.h"
#include "tests/loopback.h"
#include "tests/test_util.h"
#include "tests/skip.h"

namespace mpirun_test {
namespace {

using est::testing::RunCommand;
using est::testing::RunResult;
using est::testing::Contains;
using est::testing::LinesWhere;

// Whether mpirun is on the PATH (Debian's openmpi-bin; make test installs it).
bool HaveMpirun() { return RunCommand("command -v mpirun").exit_code == 0; }

// `ranks` est-train processes under mpirun, the store at a free port of 127.0.0.1 (every rank
// is on this host), each output line tagged "[job,rank]<stream>:". mpirun runs as root only
// when told; the ranks are more than the cores here.
RunResult Mpirun(int ranks, const std::string& train_args) {
  return RunCommand("timeout 300 mpirun --allow-run-as-root --oversubscribe --tag-output -np " + std::to_string(ranks) +
                    " -x MASTER_PORT=" + std::to_string(est::testing::FreePort()) + " " + EST_TRAIN_PATH + " " +
                    train_args);
}

// The lines of rank `rank` in mpirun's tagged output.
std::string RankLines(const std::string& output, int rank) {
  const std::regex tag(R"(^\[\d+,)" + std::to_string(rank) + R"(\]<std(out|err)>:)");
  return LinesWhere(output, [&](const std::string& line) { return std::regex_search(line, tag); });
}

}  // namespace

TEST_CASE("mpirun -np 2: est-train's ranks train as est-launch's two workers do, bit for bit", "[apps][cluster][mpi][skippable]") {
  if (!HaveMpirun()) {
    EST_SKIP("needs mpirun (Debian's openmpi-bin)");
  }
  const std::string train = " --model fashion_mnist_cnn --strategy multi_worker --max-steps 20 --batch-size 32 "
                            "--save-checkpoints-steps 10 --log-step-count-steps 10 --seed 7 --timeout-secs 60";
  const std::string mpi_dir = est::testing::FreshTempDir("mpirun_2").string();
  const RunResult mpi = Mpirun(2, "--model-dir " + mpi_dir + train);
  INFO(mpi.output);
  REQUIRE(mpi.exit_code == 0);
  CHECK(Contains(RankLines(mpi.output, 0), "Cluster configuration from mpi: task worker:0, rank 0 of 2 (chief), "
                                           "chief at 127.0.0.1:"));
  CHECK(Contains(RankLines(mpi.output, 1), "Cluster configuration from mpi: task worker:1, rank 1 of 2, chief at "
                                           "127.0.0.1:"));
  // The chief alone writes.
  CHECK(Contains(RankLines(mpi.output, 0), "Saving checkpoints for 20"));
  CHECK_FALSE(Contains(RankLines(mpi.output, 1), "Saving checkpoints"));
  REQUIRE(est::checkpoint::LatestCheckpoint(mpi_dir) == mpi_dir + "/model.ckpt-20");

  const std::string launch_dir = est::testing::FreshTempDir("mpirun_2_launch").string();
  const RunResult launch =
      RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 2 -- " + EST_TRAIN_PATH + " --model-dir " + launch_dir + train);
  INFO(launch.output);
  REQUIRE(launch.exit_code == 0);
  CHECK(est::testing::CheckpointDifference(mpi_dir + "/model.ckpt-20", launch_dir + "/model.ckpt-20") == "");
}

TEST_CASE("mpirun -np 4: four ranks train to a checkpoint, each in its place", "[apps][cluster][mpi][skippable]") {
  if (!HaveMpirun()) {
    EST_SKIP("needs mpirun (Debian's openmpi-bin)");
  }
  const std::string dir = est::testing::FreshTempDir("mpirun_4").string();
  const RunResult mpi = Mpirun(4, "--model linear --strategy multi_worker --model-dir " + dir +
                                      " --max-steps 20 --save-checkpoints-steps 10 --timeout-secs 60");
  INFO(mpi.output);
  REQUIRE(mpi.exit_code == 0);
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    CHECK(Contains(RankLines(mpi.output, rank), "task worker:" + std::to_string(rank) + ", rank " +
                                                    std::to_string(rank) + " of 4"));
  }
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-20");
}

TEST_CASE("mpirun -np 2 with --chief-address: the ranks meet where the flag says", "[apps][cluster][mpi][skippable]") {
  if (!HaveMpirun()) {
    EST_SKIP("needs mpirun (Debian's openmpi-bin)");
  }
  const std::string dir = est::testing::FreshTempDir("mpirun_chief_address").string();
  // MASTER_PORT (Mpirun sets one) is overridden by the flag's port.
  const std::string chief = "127.0.0.1:" + std::to_string(est::testing::FreePort());
  const RunResult mpi = Mpirun(2, "--model linear --strategy multi_worker --model-dir " + dir +
                                      " --max-steps 10 --timeout-secs 60 --chief-address " + chief);
  INFO(mpi.output);
  REQUIRE(mpi.exit_code == 0);
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    CHECK(Contains(RankLines(mpi.output, rank), "--chief-address: the chief is at " + chief));
    CHECK(Contains(RankLines(mpi.output, rank), "joining job 'cluster@" + chief + "' at " + chief + " (mpi)"));
  }
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-10");
}

}  // namespace mpirun_test
