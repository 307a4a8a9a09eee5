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

  /// Predict past the token check, as the REST API's :predict makes it too, waiting until
  /// `deadline` at most.
  grpc::Status predict(const tf::PredictRequest& request, tf::PredictResponse& response,
                       std::chrono::steady_clock::time_point deadline) const;

  /// GetModelStatus's answer: the status of the version `spec` names, or of every version
  /// served when it names none (TF Serving's NOT_FOUND otherwise).
  grpc::Status model_status(const tf::ModelSpec& spec, tf::GetModelStatusResponse& response) const;

  /// OK with the version served when `spec` names it (TF Serving's NOT_FOUND and
  /// FAILED_PRECONDITION otherwise).
  grpc::Status find(const tf::ModelSpec& spec, std::shared_ptr<const Predictor>& predictor) const;

  /// The name clients ask for.
  const std::string& model_name() const { return context_.model_name; }
  /// The most bytes one input may decode to.
  int64_t max_request_bytes() const { return context_.max_request_bytes; }

 private:

  const ServiceContext context_;
};

}  // namespace est::serving::detail
