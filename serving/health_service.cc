#include "serving/health_service.h"

#include <thread>

namespace est::serving::detail {

using grpc::health::v1::HealthCheckResponse;

bool HealthService::known(const std::string& service) const {
  return service.empty() || known_(service);
}

HealthCheckResponse::ServingStatus HealthService::status(const std::string& service) const {
  if (!known(service)) return HealthCheckResponse::SERVICE_UNKNOWN;
  return ready_->load() ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

grpc::Status HealthService::Check(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  if (!known(request->service()))
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service '" + request->service() + "'");
  response->set_status(status(request->service()));
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  HealthCheckResponse response;
  response.set_status(status(request->service()));
  if (!writer->Write(response)) return grpc::Status::OK;
  while (!context->IsCancelled()) {
    std::this_thread::sleep_for(watch_interval_);
    const HealthCheckResponse::ServingStatus now = status(request->service());
    if (now != response.status()) {
      response.set_status(now);
      if (!writer->Write(response)) break;
    }
    // A stopping server ends its watches, which would otherwise hold its shutdown.
    if (now == HealthCheckResponse::NOT_SERVING) break;
  }
  return grpc::Status::OK;
}

}  // namespace est::serving::detail
