#include "serving/rest_api.h"

#include <nlohmann/json.hpp>

#include "serving/call_status.h"
#include "serving/rest_response.h"

namespace est::serving::detail {

RestApi::RestApi(const InferenceService& inference, const PredictionService& prediction, ServerMetrics& metrics,
                 const ModelRegistry& models, std::string token, std::chrono::milliseconds request_timeout)
    : kserve_(inference),
      tf_serving_(prediction),
      metrics_(metrics),
      models_(models),
      token_(std::move(token)),
      request_timeout_(request_timeout) {}

net::HttpResponse RestApi::handle(const net::HttpRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  const bool probe = request.path == "/v2/health/live" || request.path == "/v2/health/ready";
  if (!probe && !net::BearerTokenMatches(request.header("authorization"), token_)) {
    net::HttpResponse refused =
        JsonError(401, std::string(request.header("authorization").empty() ? "the request carries no token"
                                                                           : "the request's token is wrong") +
                           ": this server takes requests with the header 'Authorization: Bearer <token>' (<token>: " +
                           kTokenSource + ")");
    refused.headers.emplace_back("WWW-Authenticate", "Bearer");
    return refused;
  }
  if (request.path == "/metrics") {
    net::HttpResponse page;
    page.content_type = "text/plain; version=0.0.4; charset=utf-8";
    page.body = metrics_.text(models_);
    return page;
  }
  const auto deadline = start + request_timeout_;
  const char* api = "kserve_rest";
  std::optional<net::HttpResponse> answer = kserve_.handle(request, deadline);
  if (!answer) {
    api = "tf_serving_rest";
    answer = tf_serving_.handle(request, deadline);
  }
  if (!answer) {
    return JsonError(404, "no route " + request.path +
                              "; est-serve answers KServe v2 under /v2, TensorFlow Serving's REST API under /v1/models "
                              "and Prometheus metrics at /metrics");
  }
  if (!probe)
    metrics_.record(api, std::to_string(answer->status),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return *answer;
}

}  // namespace est::serving::detail
