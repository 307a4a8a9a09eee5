#pragma once
/// KServe v2's HTTP/JSON API (the Open Inference Protocol's REST form, as tritonclient[http] and
/// KServe's probes call it) over the gRPC service's calls: health, server and model metadata,
/// readiness, and infer with JSON tensors or the binary tensor data extension.

#include <chrono>
#include <optional>

#include "net/http_server.h"
#include "serving/inference_service.h"

namespace est::serving::detail {

/// The length header of the binary tensor data extension: the body's JSON comes first, this
/// many bytes, and the tensors' bytes after it.
inline constexpr const char* kInferenceHeaderLength = "inference-header-content-length";

/// The /v2 routes.
class KServeRest {
 public:
  explicit KServeRest(const InferenceService& service) : service_(service) {}

  /// The answer to `request` when its path is under /v2; nullopt otherwise. Errors are
  /// {"error": "<message>"} with the HTTP status of the call's gRPC status.
  /// An infer call waits for the model until `deadline` at most.
  std::optional<net::HttpResponse> handle(const net::HttpRequest& request,
                                          std::chrono::steady_clock::time_point deadline) const;

 private:
  net::HttpResponse infer(const net::HttpRequest& request, const std::string& name, const std::string& version,
                          std::chrono::steady_clock::time_point deadline) const;

  const InferenceService& service_;
};

}  // namespace est::serving::detail
