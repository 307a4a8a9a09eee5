// The variable service of a ps task: VariableShards behind gRPC, the job id and token checked
// on every call.

#include "distribute/parameter_server/variable_server.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>
#include <random>

#include "common/error.h"
#include "distribute/parameter_server/variable_service.grpc.pb.h"
#include "distribute/parameter_server/variable_shards.h"
#include "distribute/rendezvous/call_admission.h"
#include "distribute/rendezvous/grpc_credentials.h"
#include "distribute/rendezvous/grpc_logging.h"

namespace est::distribute {
namespace {

uint64_t RandomIncarnation() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device() ^ 1;  // never 0: 0 means "not known yet"
}

grpc::Status Invalid(const std::string& why) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why); }

class VariableServiceImpl final : public ps::VariableService::Service {
 public:
  explicit VariableServiceImpl(const VariableServiceOptions& options)
      : shards_(options.task),
        task_(options.task),
        incarnation_(RandomIncarnation()),
        admission_("ps " + std::to_string(options.task), options.job_id, options.token, options.host) {}

  void set_port(uint16_t port) { admission_.set_port(port); }
  uint64_t incarnation() const { return incarnation_; }

  bool wait_finished(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(finish_mutex_);
    return finished_cv_.wait_for(lock, timeout, [&] { return finished_; });
  }

  grpc::Status Describe(grpc::ServerContext* context, const ps::DescribeRequest*, ps::DescribeReply* reply) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    reply->set_incarnation(incarnation_);
    reply->set_task(static_cast<uint32_t>(task_));
    reply->set_initialized(shards_.initialized());
    reply->set_global_step(shards_.global_step());
    reply->set_plan(shards_.plan());
    return grpc::Status::OK;
  }

  grpc::Status Initialize(grpc::ServerContext* context, grpc::ServerReader<ps::InitializeRequest>* reader,
                          ps::InitializeReply* reply) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    ps::InitializeRequest request;
    ps::InitializeRequest header;
    TensorAssembler assembler;
    bool first = true;
    while (reader->Read(&request)) {
      for (const ps::TensorChunk& chunk : request.chunks())
        if (std::string error = assembler.add(chunk); !error.empty()) return Invalid(error);
      request.clear_chunks();
      if (first) header = std::move(request);
      first = false;
    }
    if (first) return Invalid("an Initialize call without messages");
    if (std::string error = assembler.check_complete(); !error.empty()) return Invalid(error);
    const std::vector<ps::ShardSpec> specs(header.shards().begin(), header.shards().end());
    const std::map<uint32_t, int64_t> positions(header.input_positions().begin(), header.input_positions().end());
    bool initialized_now = false;
    std::string error;
    try {
      error = shards_.initialize(header.plan(), specs, assembler.take(), header.global_step(), positions, initialized_now);
    } catch (const Error& e) {
      error = e.what();
    }
    if (!error.empty()) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, error);
    reply->set_initialized_now(initialized_now);
    reply->set_incarnation(incarnation_);
    return grpc::Status::OK;
  }

  grpc::Status Pull(grpc::ServerContext* context, const ps::PullRequest* request,
                    grpc::ServerWriter<ps::PullReply>* writer) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    if (!shards_.initialized())
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "ps " + std::to_string(task_) + " holds no variables yet");
    ShardValues values = shards_.pull(request->with_state());
    ps::PullReply reply;
    reply.set_global_step(values.global_step);
    reply.set_incarnation(incarnation_);
    if (request->with_state()) reply.mutable_input_positions()->insert(values.input_positions.begin(), values.input_positions.end());
    const bool written = WriteChunked<ps::PullReply>(values.tensors, reply, [&](const ps::PullReply& message) {
      return writer->Write(message);
    });
    return written ? grpc::Status::OK : grpc::Status(grpc::StatusCode::CANCELLED, "the puller went away");
  }

  grpc::Status Push(grpc::ServerContext* context, grpc::ServerReader<ps::PushRequest>* reader,
                    ps::PushReply* reply) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    ps::PushRequest request;
    ps::PushRequest header;
    TensorAssembler assembler;
    bool first = true;
    while (reader->Read(&request)) {
      for (const ps::TensorChunk& chunk : request.chunks()) {
        if (chunk.slot() != "grad") return Invalid("a push carries slot '" + chunk.slot() + "'; only gradients ('grad')");
        if (std::string error = assembler.add(chunk); !error.empty()) return Invalid(error);
      }
      request.clear_chunks();
      if (first) header = std::move(request);
      first = false;
    }
    if (first) return Invalid("a Push call without messages");
    if (std::string error = assembler.check_complete(); !error.empty()) return Invalid(error);
    if (header.incarnation() != incarnation_)
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "ps " + std::to_string(task_) + " restarted since this worker pulled (incarnation " +
                              std::to_string(header.incarnation()) + ", now " + std::to_string(incarnation_) + ")");
    ShardPush push;
    push.worker = header.worker();
    push.sequence = header.sequence();
    push.optimizers.insert(header.optimizers().begin(), header.optimizers().end());
    push.input_position = header.input_position();
    for (auto& [key, tensor] : assembler.take()) push.gradients.emplace(key.first, std::move(tensor));
    int64_t global_step = 0;
    std::string error;
    try {
      error = shards_.apply(push, global_step);
    } catch (const Error& e) {
      error = e.what();
    }
    if (!error.empty()) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, error);
    reply->set_global_step(global_step);
    reply->set_incarnation(incarnation_);
    return grpc::Status::OK;
  }

  grpc::Status Finish(grpc::ServerContext* context, const ps::FinishRequest*, ps::FinishReply*) override {
    if (grpc::Status refused = admission_.admit(*context); !refused.ok()) return refused;
    {
      std::lock_guard<std::mutex> lock(finish_mutex_);
      finished_ = true;
    }
    finished_cv_.notify_all();
    return grpc::Status::OK;
  }

 private:
  VariableShards shards_;
  const int task_;
  const uint64_t incarnation_;
  detail::CallAdmission admission_;
  std::mutex finish_mutex_;
  std::condition_variable finished_cv_;
  bool finished_ = false;
};

class VariableServerImpl final : public VariableServer {
 public:
  explicit VariableServerImpl(const VariableServiceOptions& options) : service_(options) {
    detail::RouteGrpcLogs();
    const std::string address = detail::GrpcAddress(options.host, options.port);
    grpc::ServerBuilder builder;
    int picked = 0;
    builder.AddListeningPort(address, detail::ServerCredentials(options.tls), &picked);
    builder.RegisterService(&service_);
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.SetMaxReceiveMessageSize(kMaxVariableMessageBytes);
    builder.SetMaxSendMessageSize(kMaxVariableMessageBytes);
    server_ = builder.BuildAndStart();
    EST_CHECK(server_ != nullptr && picked > 0, CommunicationError, "cannot serve ps ", options.task, " at ", address,
              ": the port is taken or the host is not this machine's");
    port_ = static_cast<uint16_t>(picked);
    service_.set_port(port_);
  }
  ~VariableServerImpl() override { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200)); }

  uint16_t port() const override { return port_; }
  uint64_t incarnation() const override { return service_.incarnation(); }
  bool wait_finished(std::chrono::milliseconds timeout) override { return service_.wait_finished(timeout); }

 private:
  VariableServiceImpl service_;
  std::unique_ptr<grpc::Server> server_;
  uint16_t port_ = 0;
};

}  // namespace

std::unique_ptr<VariableServer> VariableServer::Start(const VariableServiceOptions& options) {
  return std::make_unique<VariableServerImpl>(options);
}

}  // namespace est::distribute
