#pragma once
/// TensorFlow Serving's gRPC ModelService (GetModelStatus) over a ServedModel, for clients
/// written for TF Serving that ask which versions are served.

#include "serving/prediction_service.h"
#include "serving/proto/model_service.grpc.pb.h"

namespace est::serving::detail {

/// tensorflow.serving.ModelService.
class ModelService final : public tensorflow::serving::ModelService::Service {
 public:
  /// Answers from `prediction`'s model, with `token` ("" for none) required of every call.
  ModelService(const PredictionService& prediction, std::string token)
      : prediction_(prediction), token_(std::move(token)) {}

  grpc::Status GetModelStatus(grpc::ServerContext* context, const tf::GetModelStatusRequest* request,
                              tf::GetModelStatusResponse* response) override;

 private:
  const PredictionService& prediction_;
  const std::string token_;
};

}  // namespace est::serving::detail
