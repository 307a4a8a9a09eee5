#pragma once
/// TensorFlow Serving's gRPC PredictionService (Predict, GetModelMetadata) over a
/// ServedModel, for clients written for TF Serving.

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

 private:
  /// OK with the version served when `spec` names it (TF Serving's NOT_FOUND and
  /// FAILED_PRECONDITION otherwise).
  grpc::Status find(const tf::ModelSpec& spec, std::shared_ptr<const Predictor>& predictor) const;

  const ServiceContext context_;
};

}  // namespace est::serving::detail
