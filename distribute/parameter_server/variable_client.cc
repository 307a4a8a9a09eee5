// The client of a ps task's variable service: every call with a deadline and the job's id
// and token, retried with back-off while the task cannot be reached (it may be starting or
// restarting).

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "common/error.h"
#include "distribute/parameter_server/variable_server.h"
#include "distribute/parameter_server/variable_service_rpc.h"
#include "net/call_admission.h"
#include "distribute/rendezvous/error_text.h"
#include "net/grpc_transport.h"
#include "net/grpc_logging.h"
#include "net/stop_signal_canceller.h"

namespace est::distribute {
namespace {

// gRPC takes its deadlines on the system clock.
using GrpcClock = std::chrono::system_clock;

constexpr std::chrono::milliseconds kFirstRetry(5);
constexpr std::chrono::milliseconds kLongestRetry(200);
/// The least time one connection attempt gets (gRPC's default), so a slow handshake connects.
constexpr std::chrono::milliseconds kConnectTimeout(20000);

/// Whether a call may wait for other workers, and so ends on a stop signal (Interrupted).
enum class Waits { kNo, kForWorkers };

}  // namespace

struct VariableClient::Impl {
  VariableServiceOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<VariableServiceStub> stub;
  net::StopSignalCanceller canceller;

  std::string describe() const {
    return "ps " + std::to_string(options.task) + " at " + net::GrpcAddress(options.host, options.port);
  }

  /// Runs `attempt` (with a fresh context) until it reaches the task or the timeout passes;
  /// throws for anything but OK.
  /// With Waits::kForWorkers a pending stop signal cancels the call, which throws Interrupted.
  template <typename Attempt>
  void call(const std::string& what, Attempt&& attempt, std::optional<std::chrono::milliseconds> limit = std::nullopt,
            Waits waits = Waits::kNo) {
    const std::chrono::milliseconds timeout = limit ? std::min(*limit, options.timeout) : options.timeout;
    const auto deadline = GrpcClock::now() + timeout;
    std::chrono::milliseconds retry = kFirstRetry;
    for (;;) {
      grpc::ClientContext context;
      context.set_deadline(deadline);
      context.set_wait_for_ready(true);
      net::AddJobMetadata(context, options.job_id, options.token);
      std::optional<net::CancelOnStopSignal> cancellable;
      if (waits == Waits::kForWorkers) cancellable.emplace(canceller, context);
      const grpc::Status status = attempt(context);
      cancellable.reset();
      switch (status.error_code()) {
        case grpc::StatusCode::OK:
          return;
        case grpc::StatusCode::CANCELLED:
          net::ThrowIfStopSignalled(describe() + ": " + what);
          EST_THROW(CommunicationError, describe(), ": ", what, " was cancelled: ", status.error_message());
        case grpc::StatusCode::ABORTED:
          EST_THROW(PsJobFinished, describe(), ": ", what, ": ", status.error_message());
        case grpc::StatusCode::PERMISSION_DENIED:
          EST_THROW(ConfigError, describe(), ": ", what, ": ", status.error_message());
        case grpc::StatusCode::FAILED_PRECONDITION:
          if (status.error_details() == kConfigMismatch)
            EST_THROW(ConfigError, describe(), ": ", what, ": ", status.error_message());
          if (status.error_message().find("restarted") != std::string::npos ||
              status.error_message().find("holds no variables") != std::string::npos)
            EST_THROW(PsRestarted, describe(), ": ", what, ": ", status.error_message());
          EST_THROW(CommunicationError, describe(), ": ", what, ": ", status.error_message());
        case grpc::StatusCode::DEADLINE_EXCEEDED:
          if (channel->GetState(false) == GRPC_CHANNEL_READY)
            EST_THROW(CommunicationError, describe(), ": ", what, ": no answer within ", DescribeDuration(timeout));
          EST_THROW(CommunicationError, describe(), ": ", what, ": the task was unreachable within ",
                    DescribeDuration(timeout), net::UnreachableHint("ps task", options.host, options.tls));
        case grpc::StatusCode::UNAVAILABLE:
          if (GrpcClock::now() + retry < deadline) {
            std::this_thread::sleep_for(retry);
            retry = std::min(retry * 2, kLongestRetry);
            continue;
          }
          EST_THROW(CommunicationError, describe(), ": ", what, ": unreachable for ", DescribeDuration(timeout),
                    ": ", status.error_message(), net::UnreachableHint("ps task", options.host, options.tls));
        default:
          EST_THROW(CommunicationError, describe(), ": ", what, " failed: ", status.error_message());
      }
    }
  }
};

VariableClient::VariableClient(VariableServiceOptions options) : impl_(std::make_unique<Impl>()) {
  net::RouteGrpcLogs();
  impl_->options = std::move(options);
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxVariableMessageBytes);
  arguments.SetMaxSendMessageSize(kMaxVariableMessageBytes);
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(kFirstRetry.count()));
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(kConnectTimeout.count()));
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(kLongestRetry.count()));
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  impl_->channel = grpc::CreateCustomChannel(net::GrpcAddress(impl_->options.host, impl_->options.port),
                                             net::ClientCredentials(impl_->options.tls), arguments);
  impl_->stub = std::make_unique<VariableServiceStub>(impl_->channel);
}

VariableClient::~VariableClient() = default;

std::string VariableClient::describe() const { return impl_->describe(); }

ps::DescribeReply VariableClient::describe_task() {
  ps::DescribeRequest request;
  ps::DescribeReply reply;
  impl_->call("describe", [&](grpc::ClientContext& context) { return impl_->stub->Describe(&context, request, &reply); });
  return reply;
}

bool VariableClient::initialize(uint64_t plan, const std::vector<ps::ShardSpec>& specs,
                                const std::vector<TensorToSend>& tensors, int64_t global_step,
                                const std::map<uint32_t, int64_t>& input_positions,
                                const std::vector<ps::VariableSpec>& variables, const ps::UpdateRule& rule,
                                bool replace) {
  ps::InitializeReply reply;
  impl_->call("initialize", [&](grpc::ClientContext& context) {
    auto writer = impl_->stub->Initialize(&context, &reply);
    ps::InitializeRequest request;
    request.set_plan(plan);
    for (const auto& spec : specs) *request.add_shards() = spec;
    request.set_global_step(global_step);
    request.mutable_input_positions()->insert(input_positions.begin(), input_positions.end());
    for (const auto& variable : variables) *request.add_variables() = variable;
    *request.mutable_rule() = rule;
    request.set_replace(replace);
    WriteChunked<ps::InitializeRequest>(tensors, request, [&](InitializeFrame& frame) { return writer->Write(frame); });
    writer->WritesDone();
    return writer->Finish();
  });
  return reply.initialized_now();
}

PulledValues VariableClient::pull(uint32_t worker, bool with_state, const TensorDestination& destination) {
  ps::PullRequest request;
  request.set_worker(worker);
  request.set_with_state(with_state);
  PulledValues values;
  // A pull for a step may wait for slower workers (bounded mode); one for a checkpoint, with
  // the optimizer state, must go through even while the job stops.
  const Waits waits = with_state ? Waits::kNo : Waits::kForWorkers;
  impl_->call(with_state ? "pull with optimizer state" : "pull", [&](grpc::ClientContext& context) {
    values = PulledValues();
    TensorAssembler assembler(destination);
    std::string error;
    auto reader = impl_->stub->Pull(&context, request);
    PullFrame frame;
    bool first = true;
    while (reader->Read(&frame)) {
      if (first) {
        values.global_step = frame.header.global_step();
        values.incarnation = frame.header.incarnation();
        values.input_positions.insert(frame.header.input_positions().begin(), frame.header.input_positions().end());
        first = false;
      }
      if (error.empty()) error = assembler.add(frame);
    }
    grpc::Status status = reader->Finish();
    if (status.ok() && error.empty()) error = assembler.check_complete();
    EST_CHECK(!status.ok() || error.empty(), CommunicationError, impl_->describe(), ": pull: ", error);
    values.tensors = assembler.take();
    return status;
  }, std::nullopt, waits);
  return values;
}

ps::PushReply VariableClient::push(const ps::PushRequest& header, const std::vector<TensorToSend>& gradients) {
  ps::PushReply reply;
  impl_->call("push", [&](grpc::ClientContext& context) {
    auto writer = impl_->stub->Push(&context, &reply);
    ps::PushRequest request = header;
    WriteChunked<ps::PushRequest>(gradients, request, [&](PushFrame& frame) { return writer->Write(frame); });
    writer->WritesDone();
    return writer->Finish();
  }, std::nullopt, Waits::kForWorkers);  // a push waits for the step's other pushes in sync mode
  return reply;
}

int64_t VariableClient::apply_round(uint32_t worker, int64_t step, double global_norm) {
  ps::ApplyRoundRequest request;
  request.set_worker(worker);
  request.set_step(step);
  request.set_global_norm(global_norm);
  ps::ApplyRoundReply reply;
  impl_->call("apply round", [&](grpc::ClientContext& context) { return impl_->stub->ApplyRound(&context, request, &reply); });
  return reply.global_step();
}

void VariableClient::finish(bool job, uint32_t worker) {
  ps::FinishRequest request;
  request.set_job(job);
  request.set_worker(worker);
  ps::FinishReply reply;
  // Short: a task told by another worker may have exited already.
  impl_->call("finish", [&](grpc::ClientContext& context) { return impl_->stub->Finish(&context, request, &reply); },
              std::chrono::seconds(5));
}

}  // namespace est::distribute
