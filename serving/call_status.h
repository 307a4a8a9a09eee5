#pragma once
/// What every est-serve call does around the model: the token check, the call's deadline,
/// and the gRPC status of an error (a bad request INVALID_ARGUMENT, a full queue
/// RESOURCE_EXHAUSTED, a deadline passed DEADLINE_EXCEEDED, a model's own failure INTERNAL).

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <exception>
#include <string>

namespace est::serving::detail {

/// OK when the server has no token or the call carries "authorization: Bearer <token>"
/// (compared in constant time); UNAUTHENTICATED saying what to send otherwise.
grpc::Status CheckToken(const grpc::ServerContext& context, const std::string& token);

/// The call's deadline on the steady clock (time_point::max() when the client set none).
std::chrono::steady_clock::time_point CallDeadline(const grpc::ServerContext& context);

/// The status of the error `error` (thrown while a call was served), its message kept.
grpc::Status StatusOfError(std::exception_ptr error);

}  // namespace est::serving::detail
