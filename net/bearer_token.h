#pragma once
/// The bearer token of a server that takes calls from outside a job (est-serve): a call must
/// carry the metadata "authorization: Bearer <token>", compared in constant time.

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <string>

namespace est::net {

/// OK when `token` is empty or the call carries "authorization: Bearer <token>";
/// UNAUTHENTICATED otherwise, saying what to send and, from `source` ("est-serve
/// --token-file"), where the server's token comes from.
grpc::Status CheckBearerToken(const grpc::ServerContextBase& context, const std::string& token,
                              const std::string& source);

}  // namespace est::net
