#include "serving/rest_response.h"

#include <nlohmann/json.hpp>

#include "serving/call_status.h"

namespace est::serving::detail {

net::HttpResponse JsonResponse(int status, const nlohmann::json& body) {
  net::HttpResponse response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return response;
}

net::HttpResponse JsonError(int status, const std::string& message) {
  return JsonResponse(status, {{"error", message}});
}

net::HttpResponse JsonErrorOf(const grpc::Status& status) {
  return JsonError(HttpStatusOf(status.error_code()), status.error_message());
}

}  // namespace est::serving::detail
