#pragma once
/// The JSON answers of est-serve's REST APIs: a body, or an error {"error": "<message>"} (the
/// form KServe v2 and TensorFlow Serving's REST API both use), with an HTTP status.

#include <grpcpp/support/status.h>
#include <nlohmann/json_fwd.hpp>

#include <string>

#include "net/http_server.h"

namespace est::serving::detail {

/// `body` as JSON with `status`.
net::HttpResponse JsonResponse(int status, const nlohmann::json& body);
/// {"error": message} with `status`.
net::HttpResponse JsonError(int status, const std::string& message);
/// {"error": the status' message} with the HTTP status of its code (HttpStatusOf).
net::HttpResponse JsonErrorOf(const grpc::Status& status);

}  // namespace est::serving::detail
