#pragma once
/// The Open Inference Protocol's gRPC service (KServe v2, inference.GRPCInferenceService)
/// over the served models: health, server and model metadata, and ModelInfer.

#include <atomic>
#include <chrono>
#include <string>

#include "serving/proto/grpc_inference_service.grpc.pb.h"
#include "serving/model_registry.h"
#include "serving/server_metrics.h"

namespace est::serving::detail {

/// What ServerMetadata names.
inline constexpr const char* kServerName = "est-serve";
inline constexpr const char* kServerVersion = "1";

/// What both protocols' services know of the server.
struct ServiceContext {
  /// The models served.
  const ModelRegistry* models = nullptr;
  /// Clients' bearer token ("" for none).
  std::string token;
  /// The most bytes one input may decode to.
  int64_t max_request_bytes = 0;
  /// False once the server stops taking requests.
  const std::atomic<bool>* ready = nullptr;
  /// Where the inference calls are counted (none when null).
  ServerMetrics* metrics = nullptr;
};

/// A version of a model a call asked for (by name, and by number or label where it named one).
struct Servable {
  std::string name;
  /// Held to the end of the call: a model or version unloaded meanwhile is freed by its last call.
  std::shared_ptr<const ServedModel> model;
  std::shared_ptr<const Predictor> predictor;
  /// The call named the version: it runs on `predictor`; otherwise on the newest (a reload may
  /// swap it in after find()).
  bool pinned = false;

  /// ServedModel::predict for this version.
  TensorMap predict(const Features& request, std::chrono::steady_clock::time_point deadline, int64_t* version) const {
    return model->predict(request, deadline, version, pinned ? predictor : nullptr);
  }
};

/// "'a', 'b'": the names `models` serves, for a NOT_FOUND's message.
std::string ServedNames(const ModelRegistry& models);
/// "1, 2": the versions `model` serves.
std::string ServedVersions(const ServedModel& model);

/// Counts a gRPC call of `api` that answered `status`, begun at `start`, in `context`'s metrics.
void RecordCall(const ServiceContext& context, const char* api, const grpc::Status& status,
                std::chrono::steady_clock::time_point start);

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

  // The calls past the token check, as the REST API (KServe v2 over HTTP) makes them too.

  /// ServerReady's answer: false once the server stops taking requests.
  bool server_ready() const { return context_.ready->load(); }
  /// The most bytes one input may decode to.
  int64_t max_request_bytes() const { return context_.max_request_bytes; }
  /// ModelReady's answer.
  bool model_ready(const std::string& name, const std::string& version) const;
  /// ModelMetadata's.
  grpc::Status model_metadata(const v2::ModelMetadataRequest& request, v2::ModelMetadataResponse& response) const;
  /// ModelInfer's, waiting until `deadline` at most.
  grpc::Status infer(const v2::ModelInferRequest& request, v2::ModelInferResponse& response,
                     std::chrono::steady_clock::time_point deadline) const;

  /// OK with the version `name` and `version` ("" = the newest) name, when it is served;
  /// NOT_FOUND saying what is served otherwise.
  grpc::Status find(const std::string& name, const std::string& version, Servable& servable) const;

 private:

  const ServiceContext context_;
};

}  // namespace est::serving::detail
