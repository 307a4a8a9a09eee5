#include "distribute/collective/gloo/gloo_collective.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "common/descriptor_limit.h"
#include "common/error.h"
#include "common/thread_scheduling.h"
#include "distribute/collective/collective_backend.h"
#include "distribute/collective/flight_recorder.h"
#include "distribute/collective/gloo/gloo_connection_cut.h"
#include "distribute/collective/gloo/gloo_peers.h"
#include "distribute/collective/gloo/gloo_store.h"
#include "distribute/collective/host_hierarchy.h"
#include "distribute/collective/host_staging.h"
#include "distribute/collective/kernels_16_bit.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/store.h"

// Design notes.
// - Creating the collective is a rendezvous round of its own (job "gloo" under the prefix
//   "gloo/" of the given store): it names the ranks that never arrive before Gloo waits on
//   any of them, and gives each collective created over one store fresh keys for Gloo's
//   address exchange. The rendezvous and the connection share GlooOptions::timeout.
// - float16 and bfloat16 travel as they are and each pairwise sum is computed in float32
//   and rounded back (as NCCL sums them): half the bytes of float32 on the wire, which is
//   what gradient compression asks of the link. (The shared-memory all-reduce, where bytes
//   are cheap, sums them in float32.)
// - Tensors that are not contiguous CPU tensors of the reduced type are staged through a
//   contiguous CPU copy; the result is copied back into the caller's tensor.
// - Empty tensors and a world of one never touch the network; every rank skips an empty
//   tensor alike, since shapes agree across ranks.
// - With GlooOptions::shared_memory (ConnectWithHostHierarchy, as CreateCollective composes
//   every backend through host memory), when every rank runs on this host (one boot and one
//   set of namespaces), all-reduce goes through a shared-memory segment
//   (WithHostSharedMemory) instead of TCP loopback: it copies memory rather than pushing it
//   through the kernel's network stack, which on a small machine costs the CPU time
//   training needs. Where some hosts run several ranks,
//   all-reduce is hierarchical (WithHostHierarchy): shared memory within each host, a Gloo
//   collective of the hosts' first ranks between hosts. Other operations stay on Gloo.
// - Gloo's TCP device runs an event-loop thread that reads and writes every connection, and
//   skips a connection whose lock another thread holds, then asks epoll again: a loop woken
//   on the CPU of the thread holding the lock (the one calling into Gloo) preempts it and
//   spins until the scheduler ends its time slice, milliseconds on a worker bound to one
//   core. Where the rank's CPUs are no more than its intra-op threads (a worker bound to
//   its cores), the loop starts under SCHED_BATCH (ScopedBatchScheduling), which never
//   preempts on waking: it runs when its CPU is free or at the next tick, with its fair
//   share of time. With a spare CPU the loop has somewhere else to run, and answering at
//   once is worth more than the rare preemption (waiting for a tick per hand-off on a
//   machine busy with other processes would slow every transfer).
// - After a Gloo failure (a peer lost, a timeout) the connections are closed: the collective
//   is not usable again; create a new one.
// - Every operation goes through a flight recorder (flight_recorder.h): its number (the same
//   on every rank), kind, bytes, type and times. A rank that times out puts its record in the
//   store beside its report of the timeout, and the error ends with the recorders' diagnosis:
//   the rank that never entered the operation or is stuck in it, its host and pid (each rank
//   published them at creation), the last operation the others completed with it, and a
//   desync. Recording costs two clock reads and a short lock per operation; nothing goes to
//   the store until a timeout.
// - A lost TCP connection is reported by the rank behind it (GlooPeers). Every rank that
//   loses one records it in the store and names the first rank recorded, so that a rank
//   that fails because a failed peer exited still names the rank lost first.

namespace est::distribute {
namespace {

// How long a rank that timed out waits for its peers' reports of the same timeout.
constexpr std::chrono::milliseconds kTimeoutReportPatience(2000);

using ReduceFunction = void (*)(void*, const void*, const void*, size_t);

template <typename T>
void SetSum(gloo::AllreduceOptions& options, at::Tensor& buffer) {
  options.setOutput(buffer.data_ptr<T>(), static_cast<size_t>(buffer.numel()));
  options.setReduceFunction(static_cast<ReduceFunction>(&gloo::sum<T>));
}

// Gloo's reduce function over 16-bit values, summed by `sum`.
template <void (*sum)(uint16_t*, const uint16_t*, const uint16_t*, size_t)>
void Sum16(void* out, const void* a, const void* b, size_t n) {
  sum(static_cast<uint16_t*>(out), static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), n);
}

template <void (*sum)(uint16_t*, const uint16_t*, const uint16_t*, size_t)>
void Set16BitSum(gloo::AllreduceOptions& options, at::Tensor& buffer) {
  options.setOutput(static_cast<uint16_t*>(buffer.data_ptr()), static_cast<size_t>(buffer.numel()));
  options.setReduceFunction(static_cast<ReduceFunction>(&Sum16<sum>));
}

// The type a tensor of `type` is summed in over TCP: 16-bit floats as they are.
at::ScalarType WireType(at::ScalarType type) {
  const at::ScalarType reduced = detail::ReductionType(type, "Gloo");
  return type == at::kHalf || type == at::kBFloat16 ? type : reduced;
}

// True for Gloo's messages about a deadline that passed.
bool IsTimeout(const std::string& message) {
  return message.find("Timed out") != std::string::npos || message.find("timed out") != std::string::npos ||
         message.find("Timeout") != std::string::npos || message.find("timeout") != std::string::npos;
}

// The flight recorders' diagnosis of operation `number` from a timeout's report.
std::string DiagnoseTimeout(uint64_t number, const GlooPeers::TimeoutReport& report) {
  const auto parse = [](const std::vector<std::optional<std::string>>& texts) {
    std::vector<std::optional<RankFlightRecord>> records(texts.size());
    for (size_t rank = 0; rank < texts.size(); ++rank)
      if (texts[rank]) records[rank] = RankFlightRecord::Parse(*texts[rank]);
    return records;
  };
  return DiagnoseCollective(number, parse(report.records), parse(report.where), UnixMicros());
}

class GlooCollective final : public Collective {
 public:
  GlooCollective(int rank, int world_size, std::chrono::milliseconds timeout,
                 std::shared_ptr<gloo::rendezvous::Context> context, std::optional<GlooPeers> peers = std::nullopt,
                 std::string host = "")
      : rank_(rank),
        world_size_(world_size),
        timeout_(timeout),
        context_(std::move(context)),
        peers_(std::move(peers)),
        recorder_("gloo") {
    recorder_.Identify(rank, world_size, std::move(host));
    if (peers_) peers_->PublishWhere(recorder_.Record().Serialize());
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "gloo"; }
  std::vector<int> lost_ranks() const override {
    const std::lock_guard<std::mutex> lock(lost_mutex_);
    return lost_;
  }
  // The loss is recorded in the store before the connection is cut, so that the peers whose
  // calls fail next (when this rank leaves the group) name the rank cut off, not this one.
  void cut_off(const std::vector<int>& ranks) override {
    for (int peer : ranks) {
      EST_CHECK(peer >= 0 && peer < world_size_, ConfigError, "Gloo collective of rank ", rank_, " of ", world_size_,
                ": cannot cut off rank ", peer, " (a rank in [0, ", world_size_, ") expected)");
      if (peer == rank_) continue;
      {
        const std::lock_guard<std::mutex> lock(lost_mutex_);
        if (std::find(cut_.begin(), cut_.end(), peer) != cut_.end()) continue;
        cut_.push_back(peer);
      }
      if (peers_) peers_->RecordLoss(peer);
      if (const auto& pair = context_->getPair(peer))
        detail::CutTcpConnection(pair->address().str(), peers_ ? peers_->ConnectedAddress(peer) : "");
    }
  }

  void allreduce(at::Tensor& tensor, ReduceOp op) override {
    const at::ScalarType type = WireType(tensor.scalar_type());
    if (world_size_ == 1) return;
    detail::AllreduceStaged(tensor, type, op, world_size_, [&](at::Tensor& buffer) { reduce_over_tcp(buffer, type); });
  }

  void broadcast(at::Tensor& tensor, int root) override {
    EST_CHECK(root >= 0 && root < world_size_, ConfigError, "Gloo broadcast: root must be in [0, ", world_size_,
              "), got ", root);
    if (tensor.numel() == 0 || world_size_ == 1) return;
    at::Tensor buffer = detail::Staged(tensor, tensor.scalar_type());
    Run("broadcast", &buffer, [&] {
      gloo::BroadcastOptions options(context_);
      options.setTag(next_tag_++);
      options.setOutput(static_cast<uint8_t*>(buffer.data_ptr()), buffer.nbytes());
      options.setRoot(root);
      gloo::broadcast(options);
    });
    detail::Unstage(buffer, tensor);
  }

  at::Tensor allgather(const at::Tensor& tensor) override {
    std::vector<int64_t> shape{world_size_};
    shape.insert(shape.end(), tensor.sizes().begin(), tensor.sizes().end());
    if (world_size_ == 1) return tensor.unsqueeze(0).clone(at::MemoryFormat::Contiguous);
    at::Tensor output = at::empty(shape, tensor.options().device(at::kCPU));
    if (tensor.numel() == 0) return output.to(tensor.device());
    const at::Tensor input = detail::Staged(tensor, tensor.scalar_type());
    Run("allgather", &input, [&] {
      gloo::AllgatherOptions options(context_);
      options.setTag(next_tag_++);
      options.setInput(static_cast<uint8_t*>(input.data_ptr()), input.nbytes());
      options.setOutput(static_cast<uint8_t*>(output.data_ptr()), output.nbytes());
      gloo::allgather(options);
    });
    return output.to(tensor.device());
  }

  void barrier() override {
    if (world_size_ == 1) return;
    Run("barrier", nullptr, [&] {
      gloo::BarrierOptions options(context_);
      options.setTag(next_tag_++);
      gloo::barrier(options);
    });
  }

 private:
  // Sums `buffer` (contiguous, on the CPU, of `type`) over the ranks with Gloo's all-reduce.
  void reduce_over_tcp(at::Tensor& buffer, at::ScalarType type) {
    Run("allreduce", &buffer, [&] {
      gloo::AllreduceOptions options(context_);
      options.setTag(next_tag_++);
      switch (type) {
        case at::kFloat: SetSum<float>(options, buffer); break;
        case at::kDouble: SetSum<double>(options, buffer); break;
        case at::kInt: SetSum<int32_t>(options, buffer); break;
        case at::kHalf: Set16BitSum<&SumFloat16>(options, buffer); break;
        case at::kBFloat16: Set16BitSum<&SumBFloat16>(options, buffer); break;
        default: SetSum<int64_t>(options, buffer); break;
      }
      gloo::allreduce(options);
    });
  }

  // Runs one Gloo operation on `tensor` (null for a barrier), in the flight recorder, turning
  // Gloo's errors into TimeoutError or CommunicationError.
  template <typename Body>
  void Run(const char* operation, const at::Tensor* tensor, Body&& body) {
    // The same number on every rank: all run the same operations.
    RecordedCall call =
        tensor != nullptr ? RecordedCall(recorder_, operation, *tensor) : RecordedCall(recorder_, operation, 0, "");
    const uint64_t number = call.sequence();
    const auto started = std::chrono::system_clock::now();
    std::string message;
    try {
      body();
      call.completed();
      return;
    } catch (const gloo::IoException& error) {
      message = error.what();
    } catch (const gloo::EnforceNotMet& error) {
      message = error.what();
    } catch (const gloo::Exception& error) {
      message = error.what();
    }
    call.failed();
    if (IsTimeout(message)) {
      // Which peers are behind it: those that did not time out in this operation too.
      std::string who;
      const auto report =
          peers_ ? peers_->ReportTimeout(number, kTimeoutReportPatience, recorder_.Record().Serialize()) : std::nullopt;
      if (report && !report->silent.empty()) {
        who = ": " + peers_->Describe(report->silent) + " did not arrive (stuck, or slower than the timeout)";
        if (!report->waiting.empty()) who += "; " + peers_->Describe(report->waiting) + " waited too";
      } else if (peers_ && !report) {
        who = ": the job's store is unreachable from this rank too, so this rank's own link may be cut (or the "
              "chief is gone)";
      }
      const std::string flight = report ? "; flight recorder: " + DiagnoseTimeout(number, *report) : "";
      EST_THROW(TimeoutError, "Gloo ", operation, " on rank ", rank_, " of ", world_size_, " did not complete within ",
                DescribeDuration(timeout_), who, " (a peer stopped or is stuck; the collective cannot be used again): ",
                message, flight);
    }
    const std::optional<int> lost = peers_ ? peers_->RankIn(message) : std::nullopt;
    if (lost) {
      const std::optional<int> first = peers_->RecordLoss(*lost);
      bool was_cut = false;
      {
        const std::lock_guard<std::mutex> lock(lost_mutex_);
        lost_ = {first.value_or(*lost)};
        was_cut = std::find(cut_.begin(), cut_.end(), lost_.front()) != cut_.end();
      }
      std::string also;
      if (!first) {
        also = " (the chief's store is unreachable too: the chief may be the rank lost first)";
      } else if (*first != *lost) {
        also = " (first; then the connection to rank " + std::to_string(*lost) + ")";
      }
      EST_THROW(CommunicationError, "Gloo ", operation, " on rank ", rank_, " of ", world_size_, " failed: lost rank ",
                first.value_or(*lost), also, " at ", DescribeUtcTime(std::chrono::system_clock::now()), ", ",
                DescribeDuration(
                    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now() - started)),
                " into the ", operation,
                was_cut ? ": it stopped beating (its host is gone or cut off, or it is stopped), so this rank cut its "
                          "connection; the collective cannot be used again: "
                        : ": its process exited or was killed, or the network failed; the collective cannot be used "
                          "again: ",
                message);
    }
    EST_THROW(CommunicationError, "Gloo ", operation, " on rank ", rank_, " of ", world_size_,
              " failed (a peer failed or disconnected; the collective cannot be used again): ", message);
  }

  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::optional<GlooPeers> peers_;  ///< who is behind a lost connection
  FlightRecorder recorder_;         ///< the last operations, numbered alike on every rank; names the host
  uint32_t next_tag_ = 0;
  mutable std::mutex lost_mutex_;
  std::vector<int> lost_;  ///< lost_ranks(), set when a call fails for a lost peer
  std::vector<int> cut_;   ///< the peers cut_off() cut this rank off from
};

// The ranks whose address key Gloo's full-mesh connection never found in `store`.
std::vector<int> RanksWithoutAddress(Store& store, int world_size) {
  std::vector<int> missing;
  for (int rank = 0; rank < world_size; ++rank) {
    if (!store.check({std::to_string(rank)})) missing.push_back(rank);
  }
  return missing;
}

// getaddrinfo's message when `hostname` does not resolve, else nothing. Gloo's
// tcp::CreateDevice checks getaddrinfo's result against -1 only and walks an uninitialized
// list on any other failure (EAI_NONAME for an unknown host), so names are resolved here
// first, with Gloo's hints.
std::optional<std::string> ResolutionFailure(const std::string& hostname) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int status = ::getaddrinfo(hostname.c_str(), nullptr, &hints, &result);
  if (status != 0) return status == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(status);
  ::freeaddrinfo(result);
  return std::nullopt;
}

// Gloo's rendezvous takes the store by reference up to its 2025 commits and as a shared_ptr
// since ("use shared Stores"); exactly one of these two overloads compiles against a Gloo.
template <typename GlooContext>
auto ConnectFullMesh(GlooContext& context, const std::shared_ptr<gloo::rendezvous::Store>& store,
                     std::shared_ptr<gloo::transport::Device>& device)
    -> decltype(context.connectFullMesh(*store, device)) {
  return context.connectFullMesh(*store, device);
}
template <typename GlooContext>
auto ConnectFullMesh(GlooContext& context, const std::shared_ptr<gloo::rendezvous::Store>& store,
                     std::shared_ptr<gloo::transport::Device>& device)
    -> decltype(context.connectFullMesh(store, device)) {
  return context.connectFullMesh(store, device);
}

// Connects this rank to every other through `store` within `timeout`; the rendezvous has
// already seen them all.
std::shared_ptr<gloo::rendezvous::Context> Connect(std::shared_ptr<Store> store, int rank, int world_size,
                                                   const std::string& hostname, std::chrono::milliseconds timeout) {
  if (!hostname.empty()) {
    const std::optional<std::string> failure = ResolutionFailure(hostname);
    EST_CHECK(!failure, CommunicationError, "Gloo collective of rank ", rank, ": cannot open a TCP device on '",
              hostname, "' (GlooOptions::hostname must be an address of this machine): ", *failure);
  }
  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    // The device's event-loop thread (started here) must not preempt the thread it wakes
    // for where they share the rank's only cores: see the design notes.
    const ScopedBatchScheduling batch_loop_thread(AllowedCpus() <= at::get_num_threads());
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& error) {
    if (const std::optional<std::string> exhausted = DescriptorsExhausted(error.what()))
      EST_THROW(CommunicationError, "Gloo collective of rank ", rank, ": cannot open a TCP device: ",
                NoDescriptorLeft(*exhausted));
    EST_THROW(CommunicationError, "Gloo collective of rank ", rank, ": cannot open a TCP device on '", hostname,
              "' (GlooOptions::hostname must be an address of this machine): ", error.what());
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
  context->setTimeout(timeout);
  const std::shared_ptr<gloo::rendezvous::Store> gloo_store = detail::CreateGlooStore(store, timeout);
  try {
    ConnectFullMesh(*context, gloo_store, device);
  } catch (const TimeoutError& error) {
    const std::vector<int> missing = RanksWithoutAddress(*store, world_size);
    EST_CHECK(missing.empty(), TimeoutError, "Gloo collective of rank ", rank, ": ", DescribeRanks(missing), " of ",
              world_size, " joined the rendezvous but never published their Gloo addresses within ",
              DescribeDuration(timeout));
    throw;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& error) {
    EST_CHECK(!IsTimeout(error.what()), TimeoutError, "Gloo collective of rank ", rank, " of ", world_size,
              ": connecting to the other ranks did not complete within ", DescribeDuration(timeout), ": ",
              error.what());
    if (const std::optional<std::string> exhausted = DescriptorsExhausted(error.what()))
      EST_THROW(CommunicationError, "Gloo collective of rank ", rank, " of ", world_size,
                ": connecting to the other ranks failed: ", NoDescriptorLeft(*exhausted));
    EST_THROW(CommunicationError, "Gloo collective of rank ", rank, " of ", world_size,
              ": connecting to the other ranks failed: ", error.what());
  }
  return context;
}

// The Gloo collective over TCP alone.
std::unique_ptr<Collective> ConnectGloo(std::shared_ptr<Store> store, int rank, int world_size,
                                        const GlooOptions& options) {
  EST_CHECK(world_size > 0, ConfigError, "Gloo collective: world_size must be positive, got ", world_size);
  EST_CHECK(rank >= 0 && rank < world_size, ConfigError, "Gloo collective: rank must be in [0, ", world_size,
            "), got ", rank);
  EST_CHECK(options.timeout.count() > 0, ConfigError, "Gloo collective: the timeout must be positive, got ",
            options.timeout.count(), " ms");
  if (world_size == 1) return std::make_unique<GlooCollective>(rank, world_size, options.timeout, nullptr);
  EST_CHECK(store != nullptr, ConfigError, "Gloo collective of rank ", rank, " of ", world_size,
            ": the store is null");
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  RendezvousOptions rendezvous;
  rendezvous.job_id = "gloo";
  rendezvous.rank = rank;
  rendezvous.world_size = world_size;
  rendezvous.timeout = options.timeout;
  std::shared_ptr<Store> mesh_store;
  try {
    mesh_store = Rendezvous(CreatePrefixStore("gloo", store), rendezvous);
  } catch (const TimeoutError& error) {
    EST_THROW(TimeoutError, "Gloo collective: ", error.what());
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  auto context = Connect(mesh_store, rank, world_size, options.hostname, std::max(left, std::chrono::milliseconds(1)));
  context->setTimeout(options.timeout);
  GlooPeers peers = GlooPeers::Exchange(mesh_store, *context, rank, world_size, options.timeout);
  return std::make_unique<GlooCollective>(rank, world_size, options.timeout, std::move(context), std::move(peers),
                                          options.hostname);
}

}  // namespace

std::unique_ptr<Collective> CreateGlooCollective(std::shared_ptr<Store> store, int rank, int world_size,
                                                 const GlooOptions& options) {
  if (!options.shared_memory) return ConnectGloo(std::move(store), rank, world_size, options);
  return ConnectWithHostHierarchy(
      [&options](std::shared_ptr<Store> store, int rank, int world_size) {
        return ConnectGloo(std::move(store), rank, world_size, options);
      },
      std::move(store), rank, world_size, options.timeout);
}

namespace collective_backends {

CollectiveConnector ring() {
  return {true, [](const CollectiveRequest& request) {
            GlooOptions options;
            options.hostname = request.hostname;
            options.timeout = request.timeout;
            options.shared_memory = false;  // CreateCollective composes shared memory itself
            return CreateGlooCollective(request.store, request.rank, request.world_size, options);
          }};
}

}  // namespace collective_backends

}  // namespace est::distribute
