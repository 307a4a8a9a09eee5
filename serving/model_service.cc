#include "serving/model_service.h"

#include "common/logging.h"
#include "serving/call_status.h"
#include "serving/model_config_message.h"

namespace est::serving::detail {

grpc::Status ModelService::GetModelStatus(grpc::ServerContext* context, const tf::GetModelStatusRequest* request,
                                          tf::GetModelStatusResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, token_, kTokenSource); !admitted.ok()) return admitted;
  if (!request->has_model_spec()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  return prediction_.model_status(request->model_spec(), *response);
}

grpc::Status ModelService::HandleReloadConfigRequest(grpc::ServerContext* context,
                                                     const tf::ReloadConfigRequest* request,
                                                     tf::ReloadConfigResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, token_, kTokenSource); !admitted.ok()) return admitted;
  grpc::Status status = grpc::Status::OK;
  try {
    reconfigure_(ModelConfigsOf(request->config(), "", "ReloadConfigRequest's config"));
  } catch (const ConfigError& wrong) {
    status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, wrong.what());
  } catch (const std::exception& unloadable) {
    status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, unloadable.what());
  }
  if (!status.ok()) Log().warn("est-serve: a ReloadConfigRequest was refused; what is served stays: {}", status.error_message());
  // TensorFlow's error codes are gRPC's.
  response->mutable_status()->set_error_code(static_cast<int>(status.error_code()));
  response->mutable_status()->set_error_message(status.error_message());
  return status;
}

}  // namespace est::serving::detail
