// Ranks as separate processes (tests/distribute/collective_worker.cc) on loopback, over the
// chief's gRPC store.

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "distribute/rendezvous/grpc_store.h"
#include "tests/loopback.h"
#include "tests/test_util.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;

struct Finished {
  int exit_code;  // -1 when killed
  std::string output;
  // From the start of the workers' work (RunWorkers' Start) until RunWorkers saw this one
  // exit: workers are waited for in order, so only the slowest one's time is exact.
  double seconds;
};

// The seconds of the worker that took longest.
double Slowest(const std::vector<Finished>& finished) {
  double seconds = 0;
  for (const Finished& worker : finished) seconds = std::max(seconds, worker.seconds);
  return seconds;
}

// A worker process whose stdout and stderr go to a file.
class Worker {
 public:
  Worker(const std::vector<std::string>& arguments, const std::filesystem::path& output) : output_(output) {
    std::vector<std::string> argv_strings{EST_COLLECTIVE_WORKER};
    argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (auto& argument : argv_strings) argv.push_back(argument.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int error = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(error == 0);
  }

  // Waits for the worker to exit; kills it (this process's child, by pid) after `deadline`.
  // `started`: when its work started.
  Finished Wait(std::chrono::steady_clock::time_point started, std::chrono::steady_clock::time_point deadline) {
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        return {-1, Output(), SecondsSince(started)};
      }
      std::this_thread::sleep_for(10ms);
    }
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Output(), SecondsSince(started)};
  }

 private:
  static double SecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  std::string Output() const {
    std::ifstream in(output_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::filesystem::path output_;
  pid_t pid_ = 0;
};

// How the workers of a run start.
enum class Start {
  kAsSpawned,  ///< each as soon as it has loaded, in the order given
  kTogether,   ///< all at once, after the last one has loaded: a timeout of a second or two
               ///< then bounds what the section tests, not the skew of loading the processes,
               ///< and the workers' seconds leave out their loading, however loaded the machine
};

// Starts one worker per argument list and waits for all of them: at most `limit` for them to
// load (Start::kTogether), then at most `limit` for them to exit.
std::vector<Finished> RunWorkers(std::vector<std::vector<std::string>> runs, const std::string& name,
                                 std::chrono::seconds limit = 60s, Start start = Start::kAsSpawned) {
  const auto dir = est::testing::FreshTempDir(name);
  const auto gate = dir / "gate";
  if (start == Start::kTogether) {
    std::filesystem::create_directory(gate);
    for (auto& run : runs) run.insert(run.end(), {"--gate", gate.string()});
  }
  std::vector<Worker> workers;
  workers.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) workers.emplace_back(runs[i], dir / ("worker" + std::to_string(i)));
  auto started = std::chrono::steady_clock::now();
  if (start == Start::kTogether) {
    const auto ready = [&] {
      const auto entries = std::filesystem::directory_iterator(gate);
      return static_cast<size_t>(std::distance(begin(entries), end(entries)));
    };
    while (ready() < runs.size() && std::chrono::steady_clock::now() < started + limit)
      std::this_thread::sleep_for(2ms);
    std::ofstream(gate / "go").close();
    started = std::chrono::steady_clock::now();
  }
  std::vector<Finished> finished;
  for (auto& worker : workers) finished.push_back(worker.Wait(started, started + limit));
  std::filesystem::remove_all(dir);
  return finished;
}

std::vector<std::string> RankArguments(uint16_t port, int rank, int world, const std::string& mode,
                                       int timeout_ms = 20000, const std::string& job = "test") {
  return {"--port", std::to_string(port), "--rank", std::to_string(rank), "--world", std::to_string(world),
          "--mode", mode, "--timeout-ms", std::to_string(timeout_ms), "--job", job};
}

// The chief's store server of job `job`, on a port it picks.
std::unique_ptr<est::distribute::GrpcStoreServer> Server(const std::string& job = "test") {
  est::distribute::GrpcStoreOptions options;
  options.job_id = job;
  return est::distribute::GrpcStoreServer::Start(options);
}

}  // namespace

TEST_CASE("Gloo collectives across 4 processes over a TCP store", "[distribute][multiprocess]") {
  SECTION("rank 0 serves the store, started after the other ranks") {
    const uint16_t port = est::testing::FreePort();
    std::vector<std::vector<std::string>> runs;
    for (int rank = 3; rank >= 0; --rank) runs.push_back(RankArguments(port, rank, 4, "collectives"));
    runs.back().push_back("--serve");
    const auto finished = RunWorkers(runs, "gloo_collectives");
    for (const Finished& worker : finished) {
      INFO(worker.output);
      CHECK(worker.exit_code == 0);
    }
  }

  SECTION("a rank that never starts is named by the others within the timeout") {
    auto server = Server();
    std::vector<std::vector<std::string>> runs;
    for (int rank = 0; rank < 3; ++rank) runs.push_back(RankArguments(server->port(), rank, 4, "collectives", 2000));
    const auto finished = RunWorkers(runs, "gloo_missing_rank", 60s, Start::kTogether);
    CHECK(Slowest(finished) < 8);
    for (const Finished& worker : finished) {
      INFO(worker.output);
      CHECK(worker.exit_code == 3);
      CHECK_THAT(worker.output, Catch::Contains("TimeoutError: rendezvous of job 'test'") &&
                                    Catch::Contains("rank 3 of 4 never arrived within 2 s"));
    }
  }

  SECTION("the Gloo collective's own rendezvous names a missing rank") {
    auto server = Server();
    std::vector<std::vector<std::string>> runs;
    for (int rank : {0, 2}) runs.push_back(RankArguments(server->port(), rank, 3, "gloo", 1000));
    const auto finished = RunWorkers(runs, "gloo_own_rendezvous", 60s, Start::kTogether);
    for (const Finished& worker : finished) {
      INFO(worker.output);
      CHECK(worker.exit_code == 3);
      CHECK_THAT(worker.output, Catch::Contains("Gloo collective") &&
                                    Catch::Contains("rank 1 of 3 never arrived within 1 s"));
    }
  }

  SECTION("a peer process that exits fails the others' shared-memory all-reduce at once, naming it") {
    const uint16_t port = est::testing::FreePort();
    std::vector<std::vector<std::string>> runs;
    for (int rank = 0; rank < 3; ++rank) runs.push_back(RankArguments(port, rank, 3, "peer_exits", 20000));
    runs.front().push_back("--serve");
    const auto finished = RunWorkers(runs, "gloo_peer_exits", 60s, Start::kTogether);
    CHECK(Slowest(finished) < 10);  // well within the 20 s timeout
    CHECK(finished[1].exit_code == 0);
    for (size_t rank : {0, 2}) {
      INFO(finished[rank].output);
      CHECK(finished[rank].exit_code == 4);
      CHECK_THAT(finished[rank].output, Catch::Contains("CommunicationError: Gloo allreduce on rank " +
                                                        std::to_string(rank) + " of 3 failed: rank 1 (pid") &&
                                            Catch::Contains(") exited (shared memory") &&
                                            Catch::Contains("lost ranks: [1]\n"));
    }
  }

  SECTION("a peer killed by SIGKILL fails the others' TCP all-reduce at once, naming it") {
    for (int world : {3, 4}) {
      auto server = Server();  // the store outlives the ranks, as a chief that survives does
      const int victim = world - 2;
      std::vector<std::vector<std::string>> runs;
      for (int rank = 0; rank < world; ++rank) {
        runs.push_back(RankArguments(server->port(), rank, world, "peer_killed", 30000));
        runs.back().insert(runs.back().end(), {"--victim", std::to_string(victim)});
      }
      const auto finished = RunWorkers(runs, "gloo_peer_killed", 60s, Start::kTogether);
      CHECK(Slowest(finished) < 15);  // well within the 30 s timeout
      CHECK(finished[static_cast<size_t>(victim)].exit_code == -1);  // killed
      for (int rank = 0; rank < world; ++rank) {
        if (rank == victim) continue;
        const Finished& worker = finished[static_cast<size_t>(rank)];
        INFO(worker.output);
        CHECK(worker.exit_code == 4);
        CHECK_THAT(worker.output, Catch::Contains("lost ranks: [" + std::to_string(victim) + "]\n"));
        // A rank whose own lost connection was to a rank that failed after the victim names the victim first.
        CHECK(std::regex_search(
            worker.output, std::regex("(^|\\n)CommunicationError: Gloo allreduce on rank " + std::to_string(rank) +
                                      " of " + std::to_string(world) + " failed: lost rank " + std::to_string(victim) +
                                      "( \\(first; then the connection to rank [0-9]\\))? at [0-9:.]+ UTC, [0-9.]+ m?s "
                                      "into the allreduce: its process exited or was "
                                      "killed, or the network failed; the collective cannot be used again: "
                                      "[^\\n]*(Connection reset by peer|Connection closed by peer [^\\n]*)\\n$")));
        // Its flight recorder logged the failed call when the collective ended, before the error.
        CHECK(std::regex_search(
            worker.output, std::regex("(^|\\n)\\[[^\\]]+\\] \\[warning\\] At its end, flight recorder of gloo rank " +
                                      std::to_string(rank) + " of " + std::to_string(world) +
                                      " \\(host 127\\.0\\.0\\.1, pid [0-9]+\\): 2 calls; allreduce #2 \\(4\\.0 MB "
                                      "float32\\) failed")));
      }
    }
  }

  SECTION("a killed chief, which takes the store with it, is named by the TCP all-reduce") {
    const uint16_t port = est::testing::FreePort();
    std::vector<std::vector<std::string>> runs;
    for (int rank = 0; rank < 2; ++rank) {
      runs.push_back(RankArguments(port, rank, 2, "peer_killed", 30000));
      runs.back().insert(runs.back().end(), {"--victim", "0"});
    }
    runs.front().push_back("--serve");
    const auto finished = RunWorkers(runs, "gloo_chief_killed", 60s, Start::kTogether);
    CHECK(Slowest(finished) < 15);
    CHECK(finished[0].exit_code == -1);
    INFO(finished[1].output);
    CHECK(finished[1].exit_code == 4);
    CHECK(std::regex_search(
        finished[1].output,
        std::regex("(^|\\n)CommunicationError: Gloo allreduce on rank 1 of 2 failed: lost rank 0 \\(the chief's "
                   "store is unreachable too: the chief may be the rank lost first\\) at [0-9:.]+ UTC, "
                   "[0-9.]+ m?s into the allreduce: its process exited or was killed, or the network "
                   "failed; the collective cannot be used again: [^\\n]*\\n$")));
  }

  SECTION("a stopped peer fails the others' TCP all-reduce with a TimeoutError within the timeout") {
    auto server = Server();
    std::vector<std::vector<std::string>> runs;
    for (int rank = 0; rank < 3; ++rank) runs.push_back(RankArguments(server->port(), rank, 3, "peer_stopped", 2000));
    const auto finished = RunWorkers(runs, "gloo_peer_stopped", 10s, Start::kTogether);  // then it is killed
    CHECK(Slowest(finished) < 12);
    CHECK(finished[1].exit_code == -1);
    for (size_t rank : {0, 2}) {
      INFO(finished[rank].output);
      CHECK(finished[rank].exit_code == 3);
      // The stopped rank is named, with its address; the other waiting rank too.
      const std::string other = std::to_string(rank == 0 ? 2 : 0);
      // The error is the last line, after the flight recorder's log of the failed call.
      const size_t error_at = finished[rank].output.find("\nTimeoutError: ");
      REQUIRE(error_at != std::string::npos);
      CHECK_THAT(finished[rank].output.substr(error_at + 1),
                 Catch::StartsWith("TimeoutError: Gloo allreduce on rank " + std::to_string(rank) +
                                   " of 3 did not complete within 2 s: rank 1 ([127.0.0.1]:") &&
                     Catch::Contains(") did not arrive (stuck, or slower than the timeout); rank " + other +
                                     " ([127.0.0.1]:") &&
                     Catch::Contains(") waited too (a peer stopped or is stuck; the collective cannot be used "
                                     "again): ") &&
                     Catch::Contains("Timed out waiting 2000ms for "));
      // The flight recorders: the stopped rank's host and pid, the last operation the others
      // completed with it, and the operation they waited in.
      CHECK(std::regex_search(
          finished[rank].output,
          std::regex(R"(; flight recorder: rank 1 \(host [^,]+, pid [0-9]+\) sent no record \(stopped, gone, or cut )"
                     R"(off from the store\); the last call the others completed with it is allreduce #1 \(4\.0 MB )"
                     R"(float32\), [0-9.]+ s ago; ranks 0, 2 waited in allreduce #2 \(4\.0 MB float32\)\n)")));
    }
  }

  SECTION("a second job on the same store is refused, naming both jobs") {
    auto server = Server("alpha");
    const auto first = RunWorkers({RankArguments(server->port(), 0, 1, "rendezvous", 5000, "alpha")}, "job_alpha");
    INFO(first[0].output);
    REQUIRE(first[0].exit_code == 0);
    const auto second = RunWorkers({RankArguments(server->port(), 0, 1, "rendezvous", 5000, "beta")}, "job_beta");
    INFO(second[0].output);
    CHECK(second[0].exit_code == 2);
    CHECK_THAT(second[0].output, Catch::Contains("ConfigError") && Catch::Contains("job 'beta'") &&
                                     Catch::Contains("job 'alpha'") &&
                                     Catch::Contains("127.0.0.1:" + std::to_string(server->port())));
  }
}
