#include "net/call_admission.h"

#include <grpcpp/client_context.h>

#include "common/logging.h"
#include "net/secret_compare.h"
#include "net/connection_gate.h"
#include "net/grpc_transport.h"

namespace est::net {
namespace {

/// How many refused peers are remembered (and warned of): a bound on what refusals cost.
constexpr size_t kRefusedPeersLogged = 256;

/// What a peer sent, fit for a log line: at most 64 characters, others than printable ASCII
/// as '?'.
std::string Printable(const std::string& text) {
  constexpr size_t kLongest = 64;
  std::string shown = text.substr(0, kLongest);
  for (char& c : shown)
    if (c < 0x20 || c > 0x7e) c = '?';
  return text.size() > kLongest ? shown + "..." : shown;
}

}  // namespace

CallAdmission::CallAdmission(std::string service, std::string job_id, std::string token, std::string host)
    : service_(std::move(service)), job_id_(std::move(job_id)), token_(std::move(token)), host_(std::move(host)) {}

grpc::Status CallAdmission::admit(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  auto value_of = [&](const char* name) -> std::string {
    auto it = metadata.find(name);
    return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
  };
  const std::string job_id = value_of("est-job-id");
  if (est::net::ConstantTimeEquals(job_id, job_id_) && est::net::ConstantTimeEquals(value_of("est-job-token"), token_))
    return grpc::Status::OK;
  return refuse(context, job_id != job_id_ ? "the call came from job '" + Printable(job_id) + "' (two jobs cannot share a " +
                                                 (service_ == "store" ? "chief's" : "task's") +
                                                 " address: give each its own port)"
                                           : "the job token is missing or wrong (EST_JOB_TOKEN)");
}

grpc::Status CallAdmission::refuse(const grpc::ServerContextBase& context, const std::string& why) {
  const std::string peer = gate_ != nullptr ? gate_->peer_of(context.peer()) : context.peer();
  {
    std::lock_guard<std::mutex> lock(refused_mutex_);
    if (refused_peers_.size() < kRefusedPeersLogged && refused_peers_.insert(peer).second) {
      Log().warn("{} of job '{}' at {}: refused a call from {}: {}", service_, job_id_, GrpcAddress(host_, port_.load()),
                 peer, why);
      if (refused_peers_.size() == kRefusedPeersLogged)
        Log().warn("{} of job '{}': {} peers refused; later ones are refused without a warning", service_, job_id_,
                   kRefusedPeersLogged);
    }
  }
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "refused by the " + service_ + " of job '" + job_id_ + "': " + why);
}

void AddJobMetadata(grpc::ClientContext& context, const std::string& job_id, const std::string& token) {
  context.AddMetadata("est-job-id", job_id);
  context.AddMetadata("est-job-token", token);
}

}  // namespace est::net
