#include "serving/call_status.h"

#include <iterator>

#include "common/error.h"
#include "common/logging.h"
#include "serving/dynamic_batcher.h"
#include "serving/predictor.h"

namespace est::serving::detail {

grpc::Status CheckRequestSize(size_t bytes, int64_t max_bytes) {
  if (static_cast<int64_t>(bytes) <= max_bytes) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "the request is " + std::to_string(bytes) + " bytes; the most a request may carry is " +
                          std::to_string(max_bytes) + " (max_request_bytes, est-serve --max-request-mib)");
}

std::chrono::steady_clock::time_point CallDeadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return std::chrono::steady_clock::time_point::max();
  const auto left = deadline - std::chrono::system_clock::now();
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
}

grpc::Status StatusOfError(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const RequestError& bad) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, bad.what());
  } catch (const QueueFullError& full) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, full.what());
  } catch (const TimeoutError& late) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, late.what());
  } catch (const CommunicationError& stopping) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, stopping.what());
  } catch (const std::exception& failed) {
    Log().error("est-serve: the model failed on a request: {}", failed.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string("the model failed: ") + failed.what());
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "the model failed with an exception of an unknown type");
  }
}

std::string StatusCodeName(grpc::StatusCode code) {
  static constexpr const char* kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                           "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                                           "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const auto index = static_cast<size_t>(code);
  return index < std::size(kNames) ? kNames[index] : std::to_string(index);
}

int HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return 200;
    case grpc::StatusCode::CANCELLED: return 499;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE: return 400;
    case grpc::StatusCode::UNAUTHENTICATED: return 401;
    case grpc::StatusCode::PERMISSION_DENIED: return 403;
    case grpc::StatusCode::NOT_FOUND: return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED: return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return 429;
    case grpc::StatusCode::UNIMPLEMENTED: return 501;
    case grpc::StatusCode::UNAVAILABLE: return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return 504;
    default: return 500;
  }
}

}  // namespace est::serving::detail
