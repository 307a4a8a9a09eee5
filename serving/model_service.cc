#include "serving/model_service.h"

#include "serving/call_status.h"

namespace est::serving::detail {

grpc::Status ModelService::GetModelStatus(grpc::ServerContext* context, const tf::GetModelStatusRequest* request,
                                          tf::GetModelStatusResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, token_, kTokenSource); !admitted.ok()) return admitted;
  if (!request->has_model_spec()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  return prediction_.model_status(request->model_spec(), *response);
}

}  // namespace est::serving::detail
