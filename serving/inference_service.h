#pragma once
/// The Open Inference Protocol's gRPC service (KServe v2, inference.GRPCInferenceService)
/// over a ServedModel: health, server and model metadata, and ModelInfer.

#include <atomic>
#include <string>

#include "serving/proto/grpc_inference_service.grpc.pb.h"
#include "serving/served_model.h"

namespace est::serving::detail {

/// What both protocols' services know of the server.
struct ServiceContext {
  const ServedModel* model = nullptr;
  /// The name clients ask for.
  std::string model_name;
  /// Clients' bearer token ("" for none).
  std::string token;
  /// The most bytes one input may decode to.
  int64_t max_request_bytes = 0;
  /// False once the server stops taking requests.
  const std::atomic<bool>* ready = nullptr;
};

/// inference.GRPCInferenceService.
class InferenceService final : public inference::GRPCInferenceService::Service {
 public:
  explicit InferenceService(ServiceContext context) : context_(std::move(context)) {}

  grpc::Status ServerLive(grpc::ServerContext* context, const v2::ServerLiveRequest* request,
                          v2::ServerLiveResponse* response) override;
  grpc::Status ServerReady(grpc::ServerContext* context, const v2::ServerReadyRequest* request,
                           v2::ServerReadyResponse* response) override;
  grpc::Status ModelReady(grpc::ServerContext* context, const v2::ModelReadyRequest* request,
                          v2::ModelReadyResponse* response) override;
  grpc::Status ServerMetadata(grpc::ServerContext* context, const v2::ServerMetadataRequest* request,
                              v2::ServerMetadataResponse* response) override;
  grpc::Status ModelMetadata(grpc::ServerContext* context, const v2::ModelMetadataRequest* request,
                             v2::ModelMetadataResponse* response) override;
  grpc::Status ModelInfer(grpc::ServerContext* context, const v2::ModelInferRequest* request,
                          v2::ModelInferResponse* response) override;

 private:
  /// OK with the version served when `name` and `version` ("" = the served one) name it;
  /// NOT_FOUND saying what is served otherwise.
  grpc::Status find(const std::string& name, const std::string& version,
                    std::shared_ptr<const Predictor>& predictor) const;

  const ServiceContext context_;
};

}  // namespace est::serving::detail
