#pragma once
/// TensorFlow Serving's gRPC PredictionService (Predict, GetModelMetadata) over the served
/// models, for clients written for TF Serving.

#include "serving/inference_service.h"
#include "serving/proto/prediction_service.grpc.pb.h"

namespace est::serving::detail {

/// tensorflow.serving.PredictionService.
class PredictionService final : public tensorflow::serving::PredictionService::Service {
 public:
  explicit PredictionService(ServiceContext context) : context_(std::move(context)) {}

  grpc::Status Predict(grpc::ServerContext* context, const tf::PredictRequest* request,
                       tf::PredictResponse* response) override;
  grpc::Status GetModelMetadata(grpc::ServerContext* context, const tf::GetModelMetadataRequest* request,
                                tf::GetModelMetadataResponse* response) override;

  /// Predict past the token check, as the REST API's :predict makes it too, waiting until
  /// `deadline` at most.
  grpc::Status predict(const tf::PredictRequest& request, tf::PredictResponse& response,
                       std::chrono::steady_clock::time_point deadline) const;

  /// GetModelStatus's answer: the status of the version `spec` names, or of every version
  /// served when it names none (TF Serving's NOT_FOUND otherwise).
  grpc::Status model_status(const tf::ModelSpec& spec, tf::GetModelStatusResponse& response) const;

  /// OK with the version `spec` names (by number or label; the newest when it names none) when
  /// it is served (TF Serving's NOT_FOUND, INVALID_ARGUMENT and FAILED_PRECONDITION otherwise).
  grpc::Status find(const tf::ModelSpec& spec, Servable& servable) const;
  /// The most bytes one input may decode to.
  int64_t max_request_bytes() const { return context_.max_request_bytes; }

 private:

  const ServiceContext context_;
};

}  // namespace est::serving::detail
