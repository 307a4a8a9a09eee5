// One rank of a multi-process collective test: connects to a TCP store, rendezvouses,
// runs the Gloo collectives on known inputs and checks the results itself.
//
//   collective_worker --host H --port P --rank R --world N [--job ID] [--timeout-ms T] [--bind ADDRESS]
//                     [--mode collectives|rendezvous|gloo|peer_exits|peer_killed|peer_stopped|hierarchy|
//                     link_cut] [--victim V] [--serve] [--gate DIR] [--store-timeout-ms T] [--cut-gate DIR]
//
// Modes: "collectives" (rendezvous, Gloo collective, every operation checked), "rendezvous"
// (the rendezvous only), "gloo" (the Gloo collective straight over the store, without a
// rendezvous of its own), "peer_exits" (rank 1 exits after connecting, the others
// all-reduce), "hierarchy" (ranks on several hosts, some sharing one: the collective must
// be hierarchical, every operation checked, and its all-reduce matches a flat one over TCP:
// integers exactly, floats within rounding, the same bits on every rank), "link_cut" (one
// all-reduce, then --cut-gate is passed while the test cuts a link, then an all-reduce that
// must fail, printed with the seconds it took). With --serve
// this rank hosts the store on port P, as a chief does; --bind is the address its Gloo
// transport binds (its host's). With --gate, the worker starts its work only once all of
// them have loaded: it creates DIR/ready.<pid>, then waits for DIR/go (made by the test).
// Exit status: 0 success, 1 wrong result or bad usage, 2 ConfigError, 3 TimeoutError,
// 4 CommunicationError, 5 any other error. Errors are printed as "<Type>: <message>".

#include <ATen/ATen.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "common/error.h"
#include "distribute/collective/gloo/gloo_collective.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/grpc_store.h"

namespace {

using est::distribute::Collective;
using est::distribute::ReduceOp;

struct Arguments {
  std::string host = "127.0.0.1";
  int port = 0;
  int rank = 0;
  int world = 1;
  std::string job = "test";
  int timeout_ms = 10000;
  std::string mode = "collectives";
  bool serve = false;
  int victim = 1;
  std::string bind = "127.0.0.1";
  std::string gate;  ///< the start gate's folder, or empty
  int store_timeout_ms = 0;  ///< the store client's timeout; 0: timeout_ms
  std::string cut_gate;  ///< link_cut: the gate passed after the first all-reduce
};

bool Parse(int argc, char** argv, Arguments& arguments) {
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--serve") {
      arguments.serve = true;
    } else if (i + 1 < argc && name.rfind("--", 0) == 0) {
      values[name.substr(2)] = argv[++i];
    } else {
      return false;
    }
  }
  for (const auto& [name, value] : values) {
    if (name == "host") arguments.host = value;
    else if (name == "port") arguments.port = std::atoi(value.c_str());
    else if (name == "rank") arguments.rank = std::atoi(value.c_str());
    else if (name == "world") arguments.world = std::atoi(value.c_str());
    else if (name == "job") arguments.job = value;
    else if (name == "timeout-ms") arguments.timeout_ms = std::atoi(value.c_str());
    else if (name == "mode") arguments.mode = value;
    else if (name == "victim") arguments.victim = std::atoi(value.c_str());
    else if (name == "bind") arguments.bind = value;
    else if (name == "gate") arguments.gate = value;
    else if (name == "store-timeout-ms") arguments.store_timeout_ms = std::atoi(value.c_str());
    else if (name == "cut-gate") arguments.cut_gate = value;
    else return false;
  }
  return arguments.port > 0;
}

// Counts wrong results, printing each.
class Checker {
 public:
  void Expect(bool ok, const std::string& what) {
    if (!ok) {
      std::printf("wrong result: %s\n", what.c_str());
      ++failures_;
    }
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

void RunCollectives(Collective& collective, Checker& checker) {
  const int rank = collective.rank();
  const int world = collective.world_size();
  const int64_t total = static_cast<int64_t>(world) * (world + 1) / 2;
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong}) {
    at::Tensor sum = at::full({1001}, rank + 1, at::TensorOptions().dtype(type));
    collective.allreduce(sum, ReduceOp::kSum);
    checker.Expect(at::equal(sum, at::full({1001}, total, sum.options())),
                   std::string("allreduce sum of ") + at::toString(type));
    at::Tensor mean = at::full({7}, rank + 1, at::TensorOptions().dtype(type)).reshape({7, 1}).t();
    collective.allreduce(mean, ReduceOp::kMean);
    const at::Tensor expected = at::isFloatingType(type) ? at::full({1, 7}, (world + 1) / 2.0, mean.options())
                                                         : at::full({1, 7}, (world + 1) / 2, mean.options());
    checker.Expect(at::equal(mean, expected), std::string("allreduce mean of ") + at::toString(type));
  }
  const int root = world > 2 ? 2 : world - 1;
  at::Tensor broadcast = at::arange(10, at::kLong) + 1000 * rank;
  collective.broadcast(broadcast, root);
  checker.Expect(at::equal(broadcast, at::arange(10, at::kLong) + 1000 * root), "broadcast");
  const at::Tensor gathered = collective.allgather(at::full({2, 2}, static_cast<float>(rank)));
  checker.Expect(gathered.sizes() == at::IntArrayRef({world, 2, 2}), "allgather shape");
  for (int source = 0; source < world; ++source) {
    checker.Expect(at::equal(gathered[source], at::full({2, 2}, static_cast<float>(source))), "allgather order");
  }
  collective.barrier();
}

// The hierarchical all-reduce against a flat one over TCP, on values that round.
void CompareWithFlat(Collective& hierarchical, Collective& flat, Checker& checker) {
  const int rank = hierarchical.rank();
  at::manual_seed(rank + 1);
  const at::Tensor floats = at::randn({300'001});
  const at::Tensor integers = at::randint(-(int64_t{1} << 40), int64_t{1} << 40, {300'001}, at::kLong);
  at::Tensor a = floats.clone(), b = floats.clone(), c = integers.clone(), d = integers.clone();
  hierarchical.allreduce(a, ReduceOp::kSum);
  flat.allreduce(b, ReduceOp::kSum);
  hierarchical.allreduce(c, ReduceOp::kSum);
  flat.allreduce(d, ReduceOp::kSum);
  checker.Expect(at::equal(c, d), "hierarchical int64 sums equal the flat ones");
  checker.Expect(at::allclose(a, b, 1e-5, 1e-5), "hierarchical float32 sums equal the flat ones within rounding");
  const at::Tensor every = flat.allgather(a);
  for (int q = 0; q < hierarchical.world_size(); ++q)
    checker.Expect(at::equal(every[q], a), "rank " + std::to_string(q) + " has the same hierarchical sum");
}

// Says this process is ready in `gate`, then waits for the test to open it (at most 60 s).
void PassGate(const std::string& gate) {
  const std::filesystem::path folder(gate);
  std::ofstream(folder / ("ready." + std::to_string(::getpid()))).close();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(folder / "go")) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the start gate never opened");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Runs `call`; where it fails, prints "lost ranks: …" (the collective's lost_ranks()) first.
template <typename Call>
void ReportLostRanks(const Collective& collective, Call&& call) {
  try {
    call();
  } catch (const est::Error&) {
    std::string ranks;
    for (int rank : collective.lost_ranks()) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
    std::printf("lost ranks: [%s]\n", ranks.c_str());
    std::fflush(stdout);
    throw;
  }
}

int Run(const Arguments& arguments) {
  using namespace est::distribute;
  if (!arguments.gate.empty()) PassGate(arguments.gate);
  GrpcStoreOptions store_options;
  store_options.host = arguments.host;
  store_options.port = static_cast<uint16_t>(arguments.port);
  store_options.job_id = arguments.job;
  store_options.timeout =
      std::chrono::milliseconds(arguments.store_timeout_ms > 0 ? arguments.store_timeout_ms : arguments.timeout_ms);
  std::shared_ptr<Store> store;
  if (arguments.serve)
    store = ServeGrpcStore(store_options);
  else
    store = CreateGrpcStore(store_options);
  GlooOptions gloo_options;
  gloo_options.timeout = std::chrono::milliseconds(arguments.timeout_ms);
  gloo_options.hostname = arguments.bind;
  gloo_options.shared_memory = arguments.mode != "peer_killed" && arguments.mode != "peer_stopped";
  if (arguments.mode == "gloo") {
    CreateGlooCollective(store, arguments.rank, arguments.world, gloo_options);
    return 0;
  }
  RendezvousOptions rendezvous;
  rendezvous.job_id = arguments.job;
  rendezvous.rank = arguments.rank;
  rendezvous.world_size = arguments.world;
  rendezvous.timeout = std::chrono::milliseconds(arguments.timeout_ms);
  auto view = Rendezvous(store, rendezvous);
  if (arguments.mode == "rendezvous") return 0;
  auto collective = CreateGlooCollective(view, arguments.rank, arguments.world, gloo_options);
  if (arguments.mode == "peer_exits") {  // rank 1 vanishes without closing anything; the others all-reduce
    if (arguments.rank == 1) std::_Exit(0);
    at::Tensor tensor = at::ones({1 << 20});
    ReportLostRanks(*collective, [&] { collective->allreduce(tensor, ReduceOp::kSum); });
    std::printf("the all-reduce succeeded without rank 1\n");
    return 1;
  }
  if (arguments.mode == "peer_killed" || arguments.mode == "peer_stopped") {
    // The victim dies (or stops) after one all-reduce; the others all-reduce again.
    at::Tensor first = at::full({1 << 20}, arguments.rank + 1.0);
    collective->allreduce(first, ReduceOp::kSum);
    const double total = arguments.world * (arguments.world + 1) / 2.0;
    if (!at::equal(first, at::full({1 << 20}, total))) {
      std::printf("wrong result: the all-reduce before rank %d was killed\n", arguments.victim);
      return 1;
    }
    if (arguments.rank == arguments.victim) ::raise(arguments.mode == "peer_killed" ? SIGKILL : SIGSTOP);
    at::Tensor second = at::ones({1 << 20});
    ReportLostRanks(*collective, [&] { collective->allreduce(second, ReduceOp::kSum); });
    std::printf("the all-reduce succeeded without rank %d\n", arguments.victim);
    return 1;
  }
  if (arguments.mode == "link_cut") {
    // One all-reduce, then the test cuts a link (at the cut gate), then one more: it must
    // fail, saying how long it took.
    at::Tensor first = at::ones({1 << 16});
    collective->allreduce(first, ReduceOp::kSum);
    PassGate(arguments.cut_gate);
    const auto start = std::chrono::steady_clock::now();
    try {
      at::Tensor second = at::ones({1 << 16});
      collective->allreduce(second, ReduceOp::kSum);
    } catch (const est::Error&) {
      std::printf("after %.1f s: ", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      throw;
    }
    std::printf("the all-reduce succeeded across the cut link\n");
    return 1;
  }
  Checker checker;
  if (arguments.mode == "hierarchy") {
    checker.Expect(collective->name() == "gloo+hierarchy", "a hierarchical collective, got " + collective->name());
    GlooOptions tcp = gloo_options;
    tcp.shared_memory = false;
    auto flat = CreateGlooCollective(view, arguments.rank, arguments.world, tcp);
    CompareWithFlat(*collective, *flat, checker);
  }
  RunCollectives(*collective, checker);
  return checker.failures() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Arguments arguments;
  if (!Parse(argc, argv, arguments)) {
    std::printf("usage: collective_worker --port P [--host H] [--rank R] [--world N] [--job ID] "
                "[--timeout-ms T] [--bind ADDRESS] [--mode collectives|rendezvous|gloo|peer_exits|peer_killed|peer_stopped|"
                "hierarchy|link_cut] [--victim V] [--serve] [--gate DIR] [--store-timeout-ms T] [--cut-gate DIR]\n");
    return 1;
  }
  try {
    const int status = Run(arguments);
    std::printf(status == 0 ? "ok\n" : "failed\n");
    return status;
  } catch (const est::ConfigError& error) {
    std::printf("ConfigError: %s\n", error.what());
    return 2;
  } catch (const est::TimeoutError& error) {
    std::printf("TimeoutError: %s\n", error.what());
    return 3;
  } catch (const est::CommunicationError& error) {
    std::printf("CommunicationError: %s\n", error.what());
    return 4;
  } catch (const std::exception& error) {
    std::printf("%s\n", error.what());
    return 5;
  }
}
