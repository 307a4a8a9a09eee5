#pragma once
/// What every est-serve call does around the model: the token check (net/bearer_token.h), the
/// call's deadline, and the gRPC status of an error (a bad request INVALID_ARGUMENT, a full queue
/// RESOURCE_EXHAUSTED, a deadline passed DEADLINE_EXCEEDED, a model's own failure INTERNAL).

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "net/bearer_token.h"

namespace est::serving::detail {

/// Where est-serve's bearer token comes from, as a refused call is told (net::CheckBearerToken).
inline constexpr const char* kTokenSource = "est-serve --token-file";

/// OK when a request of `bytes` (its serialized size) is at most `max_bytes`; otherwise
/// RESOURCE_EXHAUSTED naming the limit and est-serve's --max-request-mib. The server lets gRPC
/// take messages of up to twice the limit, so that this says why, not gRPC's "Received message
/// larger than max".
grpc::Status CheckRequestSize(size_t bytes, int64_t max_bytes);

/// The call's deadline on the steady clock (time_point::max() when the client set none).
std::chrono::steady_clock::time_point CallDeadline(const grpc::ServerContext& context);

/// The status of the error `error` (thrown while a call was served), its message kept.
grpc::Status StatusOfError(std::exception_ptr error);

/// The HTTP status the REST APIs answer for a call's gRPC status, as TensorFlow Serving's REST
/// API maps them (INVALID_ARGUMENT 400, UNAUTHENTICATED 401, NOT_FOUND 404, RESOURCE_EXHAUSTED
/// 429, UNAVAILABLE 503, DEADLINE_EXCEEDED 504, INTERNAL 500, …).
int HttpStatusOf(grpc::StatusCode code);

/// The code's name as gRPC writes it ("OK", "INVALID_ARGUMENT", …).
std::string StatusCodeName(grpc::StatusCode code);

}  // namespace est::serving::detail
