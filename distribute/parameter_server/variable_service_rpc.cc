#include "distribute/parameter_server/variable_service_rpc.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <thread>
#include <utility>

namespace est::distribute {
namespace {

constexpr char kDescribe[] = "/est.ps.VariableService/Describe";
constexpr char kInitialize[] = "/est.ps.VariableService/Initialize";
constexpr char kPull[] = "/est.ps.VariableService/Pull";
constexpr char kPush[] = "/est.ps.VariableService/Push";
constexpr char kApplyRound[] = "/est.ps.VariableService/ApplyRound";
constexpr char kFinish[] = "/est.ps.VariableService/Finish";

/// One call on the server: a bidirectional stream of byte buffers whose reads and writes the
/// call's thread starts and waits for. gRPC deletes it once the call is done.
class ServerCall final : public grpc::ServerGenericBidiReactor {
 public:
  /// Receives the next message; false at the end of the stream or when the call failed.
  bool read(grpc::ByteBuffer* message) {
    arm();
    StartRead(message);
    return wait();
  }
  /// Sends `message`; false when the call failed.
  bool write(const grpc::ByteBuffer& message) {
    arm();
    StartWrite(&message);
    return wait();
  }

  void OnReadDone(bool ok) override { complete(ok); }
  void OnWriteDone(bool ok) override { complete(ok); }
  void OnDone() override { delete this; }

 private:
  void arm() {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = false;
  }
  void complete(bool ok) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ok_ = ok;
      done_ = true;
    }
    completed_.notify_one();
  }
  bool wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    completed_.wait(lock, [&] { return done_; });
    return ok_;
  }

  std::mutex mutex_;
  std::condition_variable completed_;
  bool done_ = false;
  bool ok_ = false;
};

/// The frames of a client stream, read from the call; the first that cannot be read ends
/// the stream and is the call's error.
template <typename Header>
class ServerFrameReader final : public MessageReader<TensorFrame<Header>> {
 public:
  explicit ServerFrameReader(ServerCall& call) : call_(call) {}
  bool Read(TensorFrame<Header>* frame) override {
    grpc::ByteBuffer buffer;
    if (!error_.ok() || !call_.read(&buffer)) return false;
    error_ = detail::DeserializeFrame(&buffer, frame->header, frame->bytes);
    return error_.ok();
  }
  const grpc::Status& error() const { return error_; }

 private:
  ServerCall& call_;
  grpc::Status error_;
};

/// Frames written to the call.
template <typename Header>
class ServerFrameWriter final : public MessageWriter<TensorFrame<Header>> {
 public:
  explicit ServerFrameWriter(ServerCall& call) : call_(call) {}
  bool Write(const TensorFrame<Header>& frame) override {
    grpc::ByteBuffer buffer;
    return detail::SerializeFrame(frame.header, frame.bytes, &buffer).ok() && call_.write(buffer);
  }

 private:
  ServerCall& call_;
};

/// Reads the call's one request into `request`.
grpc::Status ReadRequest(ServerCall& call, google::protobuf::MessageLite& request) {
  grpc::ByteBuffer buffer;
  if (!call.read(&buffer)) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller sent no request");
  return detail::ParseMessage(buffer, request, "request");
}

/// The handler's `status`, after sending `reply` when it is OK.
grpc::Status SendReply(ServerCall& call, const google::protobuf::MessageLite& reply, grpc::Status status) {
  if (status.ok() && !call.write(detail::SerializeMessage(reply)))
    return grpc::Status(grpc::StatusCode::CANCELLED, "the caller went away");
  return status;
}

/// A call of one request and one reply: `handle(request, reply)`'s status, the reply sent
/// when it is OK.
template <typename Request, typename Reply, typename Handle>
grpc::Status Unary(ServerCall& call, Handle&& handle) {
  Request request;
  if (grpc::Status bad = ReadRequest(call, request); !bad.ok()) return bad;
  Reply reply;
  return SendReply(call, reply, handle(request, reply));
}

/// A call that streams frames in and sends one reply.
template <typename Header, typename Reply, typename Handle>
grpc::Status ClientStreaming(ServerCall& call, Handle&& handle) {
  ServerFrameReader<Header> reader(call);
  Reply reply;
  grpc::Status status = handle(reader, reply);
  if (!reader.error().ok()) return reader.error();
  return SendReply(call, reply, std::move(status));
}

/// Runs `method` of `service` on `call`.
grpc::Status Serve(VariableServiceBase& service, grpc::GenericCallbackServerContext* context, ServerCall& call) {
  const std::string& method = context->method();
  if (method == kDescribe)
    return Unary<ps::DescribeRequest, ps::DescribeReply>(call, [&](const auto& request, auto& reply) {
      return service.Describe(context, &request, &reply);
    });
  if (method == kApplyRound)
    return Unary<ps::ApplyRoundRequest, ps::ApplyRoundReply>(call, [&](const auto& request, auto& reply) {
      return service.ApplyRound(context, &request, &reply);
    });
  if (method == kFinish)
    return Unary<ps::FinishRequest, ps::FinishReply>(call, [&](const auto& request, auto& reply) {
      return service.Finish(context, &request, &reply);
    });
  if (method == kInitialize)
    return ClientStreaming<ps::InitializeRequest, ps::InitializeReply>(call, [&](auto& reader, auto& reply) {
      return service.Initialize(context, &reader, &reply);
    });
  if (method == kPush)
    return ClientStreaming<ps::PushRequest, ps::PushReply>(call, [&](auto& reader, auto& reply) {
      return service.Push(context, &reader, &reply);
    });
  if (method == kPull) {
    ps::PullRequest request;
    if (grpc::Status bad = ReadRequest(call, request); !bad.ok()) return bad;
    ServerFrameWriter<ps::PullReply> writer(call);
    return service.Pull(context, &request, &writer);
  }
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no method " + method + " here: this is a ps task");
}

}  // namespace

VariableServiceHandler::~VariableServiceHandler() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return running_ == 0; });
}

grpc::ServerGenericBidiReactor* VariableServiceHandler::CreateReactor(grpc::GenericCallbackServerContext* context) {
  auto* call = new ServerCall();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++running_;
  }
  std::thread([this, context, call] {
    call->Finish(Serve(service_, context, *call));  // then gRPC deletes `call`: not touched again
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    idle_.notify_all();
  }).detach();
  return call;
}

namespace detail {

grpc::ByteBuffer SerializeMessage(const google::protobuf::MessageLite& message) {
  const std::string bytes = message.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

grpc::Status ParseMessage(grpc::ByteBuffer& buffer, google::protobuf::MessageLite& message, const char* what) {
  grpc::ProtoBufferReader reader(&buffer);
  if (!message.ParseFromZeroCopyStream(&reader))
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string("a ") + what + " that is no " + message.GetTypeName());
  return grpc::Status::OK;
}

BlockingClientCall::BlockingClientCall(grpc::GenericStub& stub, grpc::ClientContext* context, const std::string& method)
    : context_(context) {
  call_ = stub.PrepareCall(context, method, &queue_);
  call_->StartCall(this);
  started_ = wait();
}

BlockingClientCall::~BlockingClientCall() {
  if (!finished_) {
    context_->TryCancel();
    finish();
  }
  queue_.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) {
  }
}

bool BlockingClientCall::write(const grpc::ByteBuffer& message) {
  if (!started_) return false;
  call_->Write(message, this);
  return wait();
}

bool BlockingClientCall::writes_done() {
  if (!started_) return false;
  call_->WritesDone(this);
  return wait();
}

bool BlockingClientCall::read(grpc::ByteBuffer* message) {
  if (!started_) return false;
  call_->Read(message, this);
  return wait();
}

grpc::Status BlockingClientCall::finish() {
  grpc::Status status;
  call_->Finish(&status, this);
  wait();
  finished_ = true;
  return status;
}

bool BlockingClientCall::wait() {
  void* tag = nullptr;
  bool ok = false;
  return queue_.Next(&tag, &ok) && ok;
}

}  // namespace detail

grpc::Status VariableServiceStub::unary(grpc::ClientContext* context, const std::string& method,
                                        const google::protobuf::MessageLite& request,
                                        google::protobuf::MessageLite* reply) {
  detail::BlockingClientCall call(stub_, context, method);
  grpc::ByteBuffer buffer;
  const bool replied = call.write(detail::SerializeMessage(request)) && call.writes_done() && call.read(&buffer);
  grpc::Status status = call.finish();
  if (!status.ok()) return status;
  if (!replied) return grpc::Status(grpc::StatusCode::INTERNAL, "the ps task ended the call without a reply");
  return detail::ParseMessage(buffer, *reply, "reply");
}

grpc::Status VariableServiceStub::Describe(grpc::ClientContext* context, const ps::DescribeRequest& request,
                                           ps::DescribeReply* reply) {
  return unary(context, kDescribe, request, reply);
}

std::unique_ptr<ClientFrameWriter<ps::InitializeRequest, ps::InitializeReply>> VariableServiceStub::Initialize(
    grpc::ClientContext* context, ps::InitializeReply* reply) {
  return std::make_unique<ClientFrameWriter<ps::InitializeRequest, ps::InitializeReply>>(stub_, context, kInitialize,
                                                                                        reply);
}

std::unique_ptr<ClientFrameReader<ps::PullReply>> VariableServiceStub::Pull(grpc::ClientContext* context,
                                                                            const ps::PullRequest& request) {
  return std::make_unique<ClientFrameReader<ps::PullReply>>(stub_, context, kPull, request);
}

std::unique_ptr<ClientFrameWriter<ps::PushRequest, ps::PushReply>> VariableServiceStub::Push(
    grpc::ClientContext* context, ps::PushReply* reply) {
  return std::make_unique<ClientFrameWriter<ps::PushRequest, ps::PushReply>>(stub_, context, kPush, reply);
}

grpc::Status VariableServiceStub::ApplyRound(grpc::ClientContext* context, const ps::ApplyRoundRequest& request,
                                             ps::ApplyRoundReply* reply) {
  return unary(context, kApplyRound, request, reply);
}

grpc::Status VariableServiceStub::Finish(grpc::ClientContext* context, const ps::FinishRequest& request,
                                         ps::FinishReply* reply) {
  return unary(context, kFinish, request, reply);
}

}  // namespace est::distribute
