#pragma once
/// TensorFlow Serving's gRPC ModelService (GetModelStatus, HandleReloadConfigRequest) over the
/// served models, for clients written for TF Serving that ask which versions are served, or
/// change which models are.

#include <functional>
#include <vector>

#include "serving/model_config.h"
#include "serving/prediction_service.h"
#include "serving/proto/model_service.grpc.pb.h"

namespace est::serving::detail {

/// tensorflow.serving.ModelService.
class ModelService final : public tensorflow::serving::ModelService::Service {
 public:
  /// Answers from `prediction`'s models, serves the models a reload names with `reconfigure`
  /// (ModelServer::reconfigure), with `token` ("" for none) required of every call.
  ModelService(const PredictionService& prediction, std::function<bool(const std::vector<ModelConfig>&)> reconfigure,
               std::string token)
      : prediction_(prediction), reconfigure_(std::move(reconfigure)), token_(std::move(token)) {}

  grpc::Status GetModelStatus(grpc::ServerContext* context, const tf::GetModelStatusRequest* request,
                              tf::GetModelStatusResponse* response) override;
  /// Serves the request's model_config_list from now on: OK, or INVALID_ARGUMENT for a list
  /// that is wrong and FAILED_PRECONDITION for a model that does not load (what is served then
  /// stays), the status also in the response as TF Serving writes it.
  grpc::Status HandleReloadConfigRequest(grpc::ServerContext* context, const tf::ReloadConfigRequest* request,
                                         tf::ReloadConfigResponse* response) override;

 private:
  const PredictionService& prediction_;
  const std::function<bool(const std::vector<ModelConfig>&)> reconfigure_;
  const std::string token_;
};

}  // namespace est::serving::detail
