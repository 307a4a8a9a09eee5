// The Store client of the chief's store server: each call with a deadline, the job id and
// token as metadata, and retries with back-off while the server is not reachable yet.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "common/error.h"
#include "common/logging.h"
#include "net/call_admission.h"
#include "distribute/rendezvous/error_text.h"
#include "net/grpc_transport.h"
#include "net/grpc_logging.h"
#include "distribute/rendezvous/grpc_store.h"
#include "net/stop_signal_canceller.h"
#include "distribute/rendezvous/store_service.grpc.pb.h"

namespace est::distribute {
namespace {

namespace pb = est::rendezvous;
using Clock = std::chrono::system_clock;

/// Back-off between attempts to reach a server that is not listening yet: a worker started
/// before its chief connects at most about 60 ms (50 ms and gRPC's 20 % jitter) after the
/// chief listens.
constexpr std::chrono::milliseconds kFirstRetry(5);
constexpr std::chrono::milliseconds kLongestRetry(50);
/// The least time one connection attempt (TCP, then TLS) gets: gRPC's default, so that a slow
/// link or handshake still connects.
constexpr std::chrono::milliseconds kConnectTimeout(20000);
/// How long a client that has reached the server waits for it to come back: a chief that
/// went away is soon named, while a chief that starts late is waited for the whole timeout.
constexpr std::chrono::milliseconds kLostServerPatience(2000);
/// While a call is in flight, the connection is pinged this often (the server permits it,
/// grpc_credentials.cc), and given up when a ping goes unanswered for kKeepaliveTimeout: a
/// cut link drops packets without a reset, and a call on it would otherwise wait out its
/// whole timeout. The timeout leaves room for a ping queued behind a large value on a slow
/// link.
constexpr std::chrono::milliseconds kKeepaliveInterval(5000);
constexpr std::chrono::milliseconds kKeepaliveTimeout(10000);

class GrpcStore final : public Store {
 public:
  explicit GrpcStore(GrpcStoreOptions options) : options_(std::move(options)) {
    net::RouteGrpcLogs();
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(options_.max_value_bytes + options_.max_key_bytes + 1024);
    arguments.SetMaxSendMessageSize(options_.max_value_bytes + options_.max_key_bytes + 1024);
    // Reconnect quickly after a refused connect: the chief may start after its workers.
    arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(kFirstRetry.count()));
    arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(kConnectTimeout.count()));
    arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(kLongestRetry.count()));
    // A connection of its own per client, not one shared by every channel to the address.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(kKeepaliveInterval.count()));
    arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(kKeepaliveTimeout.count()));
    arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // a wait for a key sends no data
    channel_ = grpc::CreateCustomChannel(address(), net::ClientCredentials(options_.tls), arguments);
    stub_ = pb::StoreService::NewStub(channel_);
  }

  void set(const std::string& key, const std::string& value) override {
    EST_CHECK(value.size() <= static_cast<size_t>(options_.max_value_bytes), ConfigError, describe(),
              ": a value of ", value.size(), " bytes for key '", key, "'; at most ", options_.max_value_bytes);
    pb::SetRequest request;
    request.set_key(key);
    request.set_value(value);
    pb::SetReply reply;
    call("set '" + key + "'", options_.timeout,
         [&](grpc::ClientContext* context) { return stub_->Set(context, request, &reply); });
  }

  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    pb::GetRequest request;
    request.set_key(key);
    pb::GetReply reply;
    const auto deadline = Clock::now() + timeout;
    const grpc::Status status = call("get '" + key + "'", timeout, [&](grpc::ClientContext* context) {
      request.set_timeout_ms(left(deadline).count());
      return stub_->Get(context, request, &reply);
    }, /*waits=*/true);
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
      EST_THROW(TimeoutError, describe(), ": ", DescribeKeys({key}), " not set within ", DescribeDuration(timeout));
    return reply.value();
  }

  int64_t add(const std::string& key, int64_t delta) override {
    pb::AddRequest request;
    request.set_key(key);
    request.set_delta(delta);
    pb::AddReply reply;
    call("add to '" + key + "'", options_.timeout,
         [&](grpc::ClientContext* context) { return stub_->Add(context, request, &reply); });
    return reply.value();
  }

  bool check(const std::vector<std::string>& keys) override {
    pb::CheckRequest request;
    for (const auto& key : keys) request.add_keys(key);
    pb::CheckReply reply;
    call("check", options_.timeout, [&](grpc::ClientContext* context) { return stub_->Check(context, request, &reply); });
    return reply.all_set();
  }

  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    pb::WaitRequest request;
    for (const auto& key : keys) request.add_keys(key);
    pb::WaitReply reply;
    const auto deadline = Clock::now() + timeout;
    const grpc::Status status = call("wait", timeout, [&](grpc::ClientContext* context) {
      request.set_timeout_ms(left(deadline).count());
      return stub_->Wait(context, request, &reply);
    }, /*waits=*/true);
    std::vector<std::string> missing(reply.missing().begin(), reply.missing().end());
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) missing = keys;
    if (!missing.empty())
      EST_THROW(TimeoutError, describe(), ": ", DescribeKeys(missing), " not set within ", DescribeDuration(timeout));
  }

  bool remove(const std::string& key) override {
    pb::DeleteRequest request;
    request.set_key(key);
    pb::DeleteReply reply;
    call("delete '" + key + "'", options_.timeout,
         [&](grpc::ClientContext* context) { return stub_->Delete(context, request, &reply); });
    return reply.deleted();
  }

  std::vector<std::string> list(const std::string& prefix) override {
    pb::ListRequest request;
    request.set_prefix(prefix);
    pb::ListReply reply;
    call("list '" + prefix + "'", options_.timeout,
         [&](grpc::ClientContext* context) { return stub_->List(context, request, &reply); });
    return {reply.keys().begin(), reply.keys().end()};
  }

  std::string describe() const override { return "store " + address(); }

 private:
  std::string address() const { return net::GrpcAddress(options_.host, options_.port); }

  static std::chrono::milliseconds left(Clock::time_point deadline) {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
  }

  /// Runs `attempt` until it reaches the server or `timeout` passes. Returns its status when
  /// OK, or DEADLINE_EXCEEDED for a call that `waits` for keys; throws for the rest. A stop
  /// signal (StopSignalGuard) ends a call that waits for keys, or for the server to be
  /// reached, within 50 ms: Interrupted.
  template <typename Attempt>
  grpc::Status call(const std::string& what, std::chrono::milliseconds timeout, Attempt&& attempt, bool waits = false) {
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    std::optional<Clock::time_point> lost_since;  // when a server reached before stopped answering
    std::chrono::milliseconds retry = kFirstRetry;
    for (;;) {
      const bool reached = reached_.load();
      // Once a server that answered is lost, every attempt ends within kLostServerPatience of
      // the loss: a reconnect whose packets are dropped would otherwise take the whole timeout.
      const auto give_up = [&] { return lost_since ? std::min(deadline, *lost_since + kLostServerPatience) : deadline; };
      // An attempt that waits for the server to listen ends every progress_interval, to say so.
      const bool awaits_server = !reached && !waits;
      const auto report_at = std::min(deadline, Clock::now() + options_.progress_interval);
      grpc::ClientContext context;
      // A waiting call gets a little longer than its wait, so that the server answers it.
      context.set_deadline(waits && !lost_since ? deadline + std::chrono::seconds(1)
                           : awaits_server     ? report_at
                                               : give_up());
      // Until the server first answers, a call waits for it to listen; after that, a call
      // fails at once when the server is gone, and is retried below for kLostServerPatience.
      context.set_wait_for_ready(!reached);
      net::AddJobMetadata(context, options_.job_id, options_.token);
      std::optional<net::CancelOnStopSignal> cancellable;
      if (waits || !reached) cancellable.emplace(canceller_, context);
      const grpc::Status status = attempt(&context);
      cancellable.reset();
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE && status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED)
        reached_ = true;
      switch (status.error_code()) {
        case grpc::StatusCode::OK:
          return status;
        case grpc::StatusCode::CANCELLED:
          net::ThrowIfStopSignalled(describe() + ": " + what);
          EST_THROW(CommunicationError, describe(), ": ", what, " was cancelled: ", status.error_message());
        case grpc::StatusCode::DEADLINE_EXCEEDED:
          if (lost_since) ThrowLost(what, *lost_since, status);
          // Not sent while the channel was never ready, so the attempt is safe to repeat.
          if (awaits_server && report_at < deadline && channel_->GetState(false) != GRPC_CHANNEL_READY) {
            Log().info("{}: waiting for the chief to listen (job '{}'); {} of {} passed", describe(), options_.job_id,
                       DescribeDuration(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)),
                       DescribeDuration(timeout));
            continue;
          }
          if (channel_->GetState(false) != GRPC_CHANNEL_READY)
            EST_THROW(CommunicationError, describe(), ": ", what, ": the store was unreachable for ",
                      DescribeDuration(timeout), Hint());
          if (waits) return status;
          // (Within the timeout for a call of a client that had reached the server; sooner for a
          // first call sent just as a progress interval ended, which is not repeated.)
          EST_THROW(CommunicationError, describe(), ": ", what, " got no answer within ",
                    DescribeDuration(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)));
        case grpc::StatusCode::PERMISSION_DENIED:
          EST_THROW(ConfigError, describe(), ": ", what, ": ", status.error_message());
        case grpc::StatusCode::UNAVAILABLE: {
          if (reached && !lost_since) lost_since = Clock::now();
          if (Clock::now() + retry < give_up()) {
            net::ThrowIfStopSignalled(describe() + ": " + what);
            std::this_thread::sleep_for(retry);
            retry = std::min(retry * 2, kLongestRetry);
            continue;
          }
          if (lost_since) ThrowLost(what, *lost_since, status);
          EST_THROW(CommunicationError, describe(), ": ", what, ": unreachable for ", DescribeDuration(timeout), ": ",
                    status.error_message(), Hint());
        }
        default:
          EST_THROW(CommunicationError, describe(), ": ", what, " failed: ", status.error_message());
      }
    }
  }

  /// The error of a call whose server answered before and has not since `lost_since`.
  [[noreturn]] void ThrowLost(const std::string& what, Clock::time_point lost_since, const grpc::Status& status) const {
    EST_THROW(CommunicationError, describe(), ": ", what, ": the store stopped answering (unreachable for ",
              DescribeDuration(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - lost_since)),
              " after it had answered; did the chief exit, or is the network between them cut?): ",
              status.error_message());
  }

  /// What to check when the chief's store cannot be reached at all.
  std::string Hint() const { return net::UnreachableHint("chief", options_.host, options_.tls); }

  GrpcStoreOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::StoreService::Stub> stub_;
  std::atomic<bool> reached_{false};  ///< the server has answered a call
  net::StopSignalCanceller canceller_;
};

}  // namespace

std::shared_ptr<Store> CreateGrpcStore(const GrpcStoreOptions& options) {
  EST_CHECK(options.timeout.count() > 0, ConfigError, "store client: the timeout must be positive, got ",
            options.timeout.count(), " ms");
  EST_CHECK(options.port > 0, ConfigError, "store client: the port of ", options.host, " must be set");
  EST_CHECK(options.progress_interval.count() > 0, ConfigError, "store client: the progress interval must be "
            "positive, got ", options.progress_interval.count(), " ms");
  // Said at once, though a name may resolve later (a Kubernetes service's, once its pod runs).
  if (const std::optional<std::string> unresolved = net::HostResolutionFailure(options.host))
    Log().warn("store client: the chief's host '{}' does not resolve ({}): calls wait up to {} for it to resolve and "
               "for the chief to listen; is its address right?",
               options.host, *unresolved, DescribeDuration(options.timeout));
  return std::make_shared<GrpcStore>(options);
}

}  // namespace est::distribute
