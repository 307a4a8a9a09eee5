#pragma once
/// est-serve's REST API: one HTTP handler in front of KServe v2's HTTP/JSON routes (/v2…),
/// TensorFlow Serving's REST routes (/v1/models/…) and the Prometheus metrics page (/metrics),
/// with the server's bearer token and the calls counted.

#include <chrono>
#include <string>

#include "net/http_server.h"
#include "serving/kserve_rest.h"
#include "serving/server_metrics.h"
#include "serving/tf_serving_rest.h"

namespace est::serving::detail {

/// The REST routes of one ModelServer.
class RestApi {
 public:
  /// `models` are what /metrics reports on; each call waits for the model `request_timeout` at
  /// most; `token` ("" for none) is required of every call but the health probes
  /// (/v2/health/live and /v2/health/ready, which Kubernetes calls).
  RestApi(const InferenceService& inference, const PredictionService& prediction, ServerMetrics& metrics,
          const ModelRegistry& models, std::string token, std::chrono::milliseconds request_timeout);

  /// Answers `request`: 404 naming the APIs' routes for another path.
  net::HttpResponse handle(const net::HttpRequest& request) const;

 private:
  KServeRest kserve_;
  TfServingRest tf_serving_;
  ServerMetrics& metrics_;
  const ModelRegistry& models_;
  const std::string token_;
  const std::chrono::milliseconds request_timeout_;
};

}  // namespace est::serving::detail
