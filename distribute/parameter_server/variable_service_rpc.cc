#include "distribute/parameter_server/variable_service_rpc.h"

#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>

namespace est::distribute {
namespace {

using grpc::internal::RpcMethod;

constexpr const char* kDescribe = "/est.ps.VariableService/Describe";
constexpr const char* kInitialize = "/est.ps.VariableService/Initialize";
constexpr const char* kPull = "/est.ps.VariableService/Pull";
constexpr const char* kPush = "/est.ps.VariableService/Push";
constexpr const char* kFinish = "/est.ps.VariableService/Finish";

template <typename Request, typename Reply>
using UnaryHandler = grpc::internal::RpcMethodHandler<VariableServiceBase, Request, Reply, grpc::protobuf::MessageLite,
                                                      grpc::protobuf::MessageLite>;

}  // namespace

VariableServiceBase::VariableServiceBase() {
  using grpc::internal::RpcServiceMethod;
  AddMethod(new RpcServiceMethod(
      kDescribe, RpcMethod::NORMAL_RPC,
      new UnaryHandler<ps::DescribeRequest, ps::DescribeReply>(
          [](VariableServiceBase* service, grpc::ServerContext* context, const ps::DescribeRequest* request,
             ps::DescribeReply* reply) { return service->Describe(context, request, reply); },
          this)));
  AddMethod(new RpcServiceMethod(
      kInitialize, RpcMethod::CLIENT_STREAMING,
      new grpc::internal::ClientStreamingHandler<VariableServiceBase, InitializeFrame, ps::InitializeReply>(
          [](VariableServiceBase* service, grpc::ServerContext* context, grpc::ServerReader<InitializeFrame>* reader,
             ps::InitializeReply* reply) { return service->Initialize(context, reader, reply); },
          this)));
  AddMethod(new RpcServiceMethod(
      kPull, RpcMethod::SERVER_STREAMING,
      new grpc::internal::ServerStreamingHandler<VariableServiceBase, ps::PullRequest, PullFrame>(
          [](VariableServiceBase* service, grpc::ServerContext* context, const ps::PullRequest* request,
             grpc::ServerWriter<PullFrame>* writer) { return service->Pull(context, request, writer); },
          this)));
  AddMethod(new RpcServiceMethod(
      kPush, RpcMethod::CLIENT_STREAMING,
      new grpc::internal::ClientStreamingHandler<VariableServiceBase, PushFrame, ps::PushReply>(
          [](VariableServiceBase* service, grpc::ServerContext* context, grpc::ServerReader<PushFrame>* reader,
             ps::PushReply* reply) { return service->Push(context, reader, reply); },
          this)));
  AddMethod(new RpcServiceMethod(
      kFinish, RpcMethod::NORMAL_RPC,
      new UnaryHandler<ps::FinishRequest, ps::FinishReply>(
          [](VariableServiceBase* service, grpc::ServerContext* context, const ps::FinishRequest* request,
             ps::FinishReply* reply) { return service->Finish(context, request, reply); },
          this)));
}

VariableServiceStub::VariableServiceStub(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      describe_(kDescribe, RpcMethod::NORMAL_RPC, channel_),
      initialize_(kInitialize, RpcMethod::CLIENT_STREAMING, channel_),
      pull_(kPull, RpcMethod::SERVER_STREAMING, channel_),
      push_(kPush, RpcMethod::CLIENT_STREAMING, channel_),
      finish_(kFinish, RpcMethod::NORMAL_RPC, channel_) {}

grpc::Status VariableServiceStub::Describe(grpc::ClientContext* context, const ps::DescribeRequest& request,
                                           ps::DescribeReply* reply) {
  return grpc::internal::BlockingUnaryCall<ps::DescribeRequest, ps::DescribeReply, grpc::protobuf::MessageLite,
                                           grpc::protobuf::MessageLite>(channel_.get(), describe_, context, request,
                                                                        reply);
}

std::unique_ptr<grpc::ClientWriter<InitializeFrame>> VariableServiceStub::Initialize(grpc::ClientContext* context,
                                                                                     ps::InitializeReply* reply) {
  return std::unique_ptr<grpc::ClientWriter<InitializeFrame>>(
      grpc::internal::ClientWriterFactory<InitializeFrame>::Create(channel_.get(), initialize_, context, reply));
}

std::unique_ptr<grpc::ClientReader<PullFrame>> VariableServiceStub::Pull(grpc::ClientContext* context,
                                                                         const ps::PullRequest& request) {
  return std::unique_ptr<grpc::ClientReader<PullFrame>>(
      grpc::internal::ClientReaderFactory<PullFrame>::Create(channel_.get(), pull_, context, request));
}

std::unique_ptr<grpc::ClientWriter<PushFrame>> VariableServiceStub::Push(grpc::ClientContext* context,
                                                                         ps::PushReply* reply) {
  return std::unique_ptr<grpc::ClientWriter<PushFrame>>(
      grpc::internal::ClientWriterFactory<PushFrame>::Create(channel_.get(), push_, context, reply));
}

grpc::Status VariableServiceStub::Finish(grpc::ClientContext* context, const ps::FinishRequest& request,
                                         ps::FinishReply* reply) {
  return grpc::internal::BlockingUnaryCall<ps::FinishRequest, ps::FinishReply, grpc::protobuf::MessageLite,
                                           grpc::protobuf::MessageLite>(channel_.get(), finish_, context, request,
                                                                        reply);
}

}  // namespace est::distribute
