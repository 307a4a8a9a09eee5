#include "net/bearer_token.h"

#include "net/secret_compare.h"

namespace est::net {

grpc::Status CheckBearerToken(const grpc::ServerContextBase& context, const std::string& token,
                              const std::string& source) {
  if (token.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  const std::string sent = it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
  if (ConstantTimeEquals(sent, "Bearer " + token)) return grpc::Status::OK;
  const std::string expected = "this server takes calls with the metadata 'authorization: Bearer <token>' (<token>: " +
                               source + ")";
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      (it == metadata.end() ? "the call carries no token: " : "the call's token is wrong: ") + expected);
}

}  // namespace est::net
