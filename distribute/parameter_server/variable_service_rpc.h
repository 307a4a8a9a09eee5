#pragma once
/// The variable service's gRPC methods (package est.ps, service VariableService), on gRPC's
/// public generic API, whose messages are byte buffers: Describe and Finish carry protobuf
/// messages; Initialize, Pull and Push stream TensorFrames, whose tensor bytes travel beside
/// their protobuf headers (tensor_frame.h), which no generated method could carry. Both sides
/// block on each message, as gRPC's synchronous API does. Internal to the parameter servers.

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "distribute/parameter_server/tensor_frame.h"
#include "distribute/parameter_server/variable_service.pb.h"

namespace est::distribute {

/// Messages of the Initialize stream: the plan, the shards and their values and state.
using InitializeFrame = TensorFrame<ps::InitializeRequest>;
/// Messages of the Pull stream: the values (and state) of the task's shards.
using PullFrame = TensorFrame<ps::PullReply>;
/// Messages of the Push stream: one step's gradients.
using PushFrame = TensorFrame<ps::PushRequest>;

/// The error details of a FAILED_PRECONDITION status that refuses a call for the caller's
/// configuration (its optimizer differs from another worker's): a ConfigError on the worker.
inline constexpr char kConfigMismatch[] = "est-config-mismatch";

/// The messages a call receives, one at a time.
template <typename Message>
class MessageReader {
 public:
  virtual ~MessageReader() = default;
  /// Reads the next message into `message`; false at the end of the stream, or when the call
  /// failed or the message could not be read.
  virtual bool Read(Message* message) = 0;
};

/// The messages a call sends, one at a time.
template <typename Message>
class MessageWriter {
 public:
  virtual ~MessageWriter() = default;
  /// Sends `message`; false when the call failed.
  virtual bool Write(const Message& message) = 0;
};

/// The server side: a service implements the six calls. Each call runs on a thread of its
/// own, which may block (on other workers, or on the call's messages).
class VariableServiceBase {
 public:
  virtual ~VariableServiceBase() = default;
  /// What the task holds.
  virtual grpc::Status Describe(grpc::ServerContextBase* context, const ps::DescribeRequest* request,
                                ps::DescribeReply* reply) = 0;
  /// Gives an empty task its shards; a task that holds them already keeps its own.
  virtual grpc::Status Initialize(grpc::ServerContextBase* context, MessageReader<InitializeFrame>* reader,
                                  ps::InitializeReply* reply) = 0;
  /// The task's values (with optimizer state on request).
  virtual grpc::Status Pull(grpc::ServerContextBase* context, const ps::PullRequest* request,
                            MessageWriter<PullFrame>* writer) = 0;
  /// Applies the gradients, each shard atomically; the global step advances on ps task 0.
  virtual grpc::Status Push(grpc::ServerContextBase* context, MessageReader<PushFrame>* reader,
                            ps::PushReply* reply) = 0;
  /// SYNC, clipping by global norm: applies a gathered step with its global norm.
  virtual grpc::Status ApplyRound(grpc::ServerContextBase* context, const ps::ApplyRoundRequest* request,
                                  ps::ApplyRoundReply* reply) = 0;
  /// The job is finished (from the chief), or a worker leaves.
  virtual grpc::Status Finish(grpc::ServerContextBase* context, const ps::FinishRequest* request,
                              ps::FinishReply* reply) = 0;
};

/// Serves a VariableServiceBase through gRPC's callback generic API (register it with
/// ServerBuilder::RegisterCallbackGenericService): each call gets a thread that runs the
/// service's method, its reads and writes waiting for the call's. Destroy it after the
/// server: the destructor waits for the calls' threads.
class VariableServiceHandler final : public grpc::CallbackGenericService {
 public:
  explicit VariableServiceHandler(VariableServiceBase& service) : service_(service) {}
  ~VariableServiceHandler() override;
  VariableServiceHandler(const VariableServiceHandler&) = delete;
  VariableServiceHandler& operator=(const VariableServiceHandler&) = delete;

  /// Starts one call (gRPC calls it).
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

 private:
  VariableServiceBase& service_;
  std::mutex mutex_;
  std::condition_variable idle_;
  int running_ = 0;  ///< calls whose thread has not ended
};

namespace detail {

/// `message` as a byte buffer.
grpc::ByteBuffer SerializeMessage(const google::protobuf::MessageLite& message);
/// Parses `buffer` into `message`; INTERNAL naming `what` when it is not one.
grpc::Status ParseMessage(grpc::ByteBuffer& buffer, google::protobuf::MessageLite& message, const char* what);

/// One call of a client on the generic API, driven one operation at a time on a completion
/// queue of its own: each method returns when its operation completed.
class BlockingClientCall {
 public:
  /// Starts `method` under `context` (which must outlive this call).
  BlockingClientCall(grpc::GenericStub& stub, grpc::ClientContext* context, const std::string& method);
  /// Cancels the call when finish() was not called, and waits for it to end.
  ~BlockingClientCall();
  BlockingClientCall(const BlockingClientCall&) = delete;
  BlockingClientCall& operator=(const BlockingClientCall&) = delete;

  /// Sends `message`; false when the call failed.
  bool write(const grpc::ByteBuffer& message);
  /// Tells the server that no more messages come; false when the call failed.
  bool writes_done();
  /// Receives the next message; false at the end of the stream or when the call failed.
  bool read(grpc::ByteBuffer* message);
  /// The call's status, once the server ended it. Call once.
  grpc::Status finish();

 private:
  /// Waits for the operation in flight; whether it succeeded.
  bool wait();

  grpc::ClientContext* context_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace detail

/// A client's call that streams frames to the task and gets one reply (Initialize, Push).
template <typename Header, typename Reply>
class ClientFrameWriter {
 public:
  ClientFrameWriter(grpc::GenericStub& stub, grpc::ClientContext* context, const std::string& method, Reply* reply)
      : call_(stub, context, method), reply_(reply) {}
  /// Sends `frame`; false when the call failed.
  bool Write(const TensorFrame<Header>& frame) {
    grpc::ByteBuffer buffer;
    return detail::SerializeFrame(frame.header, frame.bytes, &buffer).ok() && call_.write(buffer);
  }
  /// Tells the task that no more frames come.
  bool WritesDone() { return call_.writes_done(); }
  /// The call's status, with the reply read into the reply given at the start when it is OK.
  grpc::Status Finish() {
    grpc::ByteBuffer buffer;
    const bool replied = call_.read(&buffer);
    grpc::Status status = call_.finish();
    if (!status.ok()) return status;
    if (!replied) return grpc::Status(grpc::StatusCode::INTERNAL, "the ps task ended the call without a reply");
    return detail::ParseMessage(buffer, *reply_, "reply");
  }

 private:
  detail::BlockingClientCall call_;
  Reply* reply_;
};

/// A client's call that sends one request and gets a stream of frames (Pull).
template <typename Header>
class ClientFrameReader {
 public:
  ClientFrameReader(grpc::GenericStub& stub, grpc::ClientContext* context, const std::string& method,
                    const google::protobuf::MessageLite& request)
      : call_(stub, context, method) {
    sent_ = call_.write(detail::SerializeMessage(request)) && call_.writes_done();
  }
  /// Reads the next frame; false at the end of the stream, when the call failed or when a
  /// frame could not be read (Finish says which).
  bool Read(TensorFrame<Header>* frame) {
    grpc::ByteBuffer buffer;
    if (!sent_ || !call_.read(&buffer)) return false;
    bad_frame_ = detail::DeserializeFrame(&buffer, frame->header, frame->bytes);
    return bad_frame_.ok();
  }
  /// The call's status; INTERNAL for a frame that could not be read.
  grpc::Status Finish() {
    grpc::Status status = call_.finish();
    return status.ok() ? bad_frame_ : status;
  }

 private:
  detail::BlockingClientCall call_;
  bool sent_ = false;
  grpc::Status bad_frame_;
};

/// The client side: blocking calls on one channel.
class VariableServiceStub {
 public:
  explicit VariableServiceStub(std::shared_ptr<grpc::Channel> channel) : stub_(std::move(channel)) {}
  grpc::Status Describe(grpc::ClientContext* context, const ps::DescribeRequest& request, ps::DescribeReply* reply);
  std::unique_ptr<ClientFrameWriter<ps::InitializeRequest, ps::InitializeReply>> Initialize(
      grpc::ClientContext* context, ps::InitializeReply* reply);
  std::unique_ptr<ClientFrameReader<ps::PullReply>> Pull(grpc::ClientContext* context, const ps::PullRequest& request);
  std::unique_ptr<ClientFrameWriter<ps::PushRequest, ps::PushReply>> Push(grpc::ClientContext* context,
                                                                          ps::PushReply* reply);
  grpc::Status ApplyRound(grpc::ClientContext* context, const ps::ApplyRoundRequest& request,
                          ps::ApplyRoundReply* reply);
  grpc::Status Finish(grpc::ClientContext* context, const ps::FinishRequest& request, ps::FinishReply* reply);

 private:
  /// A call of one request and one reply.
  grpc::Status unary(grpc::ClientContext* context, const std::string& method,
                     const google::protobuf::MessageLite& request, google::protobuf::MessageLite* reply);

  grpc::GenericStub stub_;
};

}  // namespace est::distribute
