#pragma once
/// KServe v2's HTTP/JSON API (the Open Inference Protocol's REST form, as tritonclient[http] and
/// KServe's probes call it) over the gRPC service's calls: health, server and model metadata,
/// readiness, and infer with JSON tensors or the binary tensor data extension.

#include <chrono>
#include <map>
#include <optional>

#include "net/http_server.h"
#include "serving/inference_service.h"
#include "serving/proto/kserve_v2.pb.h"

namespace est::serving {

/// An infer request's body decoded: the ModelInferRequest (every input's bytes in
/// raw_input_contents, BYTES in the protocol's length-prefixed form), and how the answer's
/// outputs are asked for.
struct KServeJsonRequest {
  v2::ModelInferRequest request;
  /// The outputs the request names, true for those it wants in binary.
  std::map<std::string, bool> binary_outputs;
  /// The request's binary_data_output: every output not named comes in binary.
  bool all_binary = false;
};

/// Decodes an infer body: JSON, or with `json_length` (the Inference-Header-Content-Length
/// header's value, "" for none) that many bytes of JSON and the inputs' binary data after it.
/// RequestError naming what is wrong; nothing beyond `max_bytes` per input is allocated.
KServeJsonRequest DecodeKServeJsonRequest(const std::string& body, const std::string& json_length, int64_t max_bytes);

namespace detail {

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

}  // namespace detail
}  // namespace est::serving
