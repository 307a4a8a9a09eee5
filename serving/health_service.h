#pragma once
/// gRPC's health checking service (grpc.health.v1.Health) on est-serve's gRPC port: the server
/// and each of its services is SERVING while the server takes calls, NOT_SERVING once it stops.
/// Like the REST API's health probes it needs no token: Kubernetes' gRPC probes send none.

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "serving/proto/health.grpc.pb.h"

namespace est::serving::detail {

/// grpc.health.v1.Health.
class HealthService final : public grpc::health::v1::Health::Service {
 public:
  /// `known`: whether a check may ask for a name besides "" (a service, a model served);
  /// `ready`: false once the server stops taking calls.
  HealthService(std::function<bool(const std::string&)> known, const std::atomic<bool>* ready,
                std::chrono::milliseconds watch_interval = std::chrono::milliseconds(500))
      : known_(std::move(known)), ready_(ready), watch_interval_(watch_interval) {}

  /// The status now; NOT_FOUND for a service the server does not have.
  grpc::Status Check(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  /// The status now, then each change, until the client cancels or the server stops (whose
  /// NOT_SERVING is the last answer); SERVICE_UNKNOWN once for an unknown service, then its changes.
  grpc::Status Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  bool known(const std::string& service) const;
  grpc::health::v1::HealthCheckResponse::ServingStatus status(const std::string& service) const;

  const std::function<bool(const std::string&)> known_;
  const std::atomic<bool>* ready_;
  const std::chrono::milliseconds watch_interval_;
};

}  // namespace est::serving::detail
