#pragma once
/// CallAdmission: what every gRPC service of a job (the chief's store, the ps tasks'
/// variable service) checks before it serves a call: the job id and the job's token in the
/// call's metadata ("est-job-id", "est-job-token"), compared in constant time. A refused
/// peer is warned of once, and at most 256 peers are remembered.

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace est::net {

class ConnectionGate;

/// Admits the calls of one job to one service.
class CallAdmission {
 public:
  /// `service` names the service in logs and refusals ("store", "ps 1").
  CallAdmission(std::string service, std::string job_id, std::string token, std::string host);
  /// The port the server listens on, for the log.
  void set_port(uint16_t port) { port_ = port; }
  /// The gate in front of the server, which names the peers of the calls it passed on; set
  /// before the gate opens.
  void set_gate(const ConnectionGate* gate) { gate_ = gate; }
  /// OK for a call of this job with the job's token; otherwise PERMISSION_DENIED saying why,
  /// and a warning the first time this peer is refused.
  grpc::Status admit(const grpc::ServerContextBase& context);

 private:
  grpc::Status refuse(const grpc::ServerContextBase& context, const std::string& why);

  const std::string service_;
  const std::string job_id_;
  const std::string token_;
  const std::string host_;
  std::atomic<uint16_t> port_{0};
  const ConnectionGate* gate_ = nullptr;
  std::mutex refused_mutex_;
  std::set<std::string> refused_peers_;
};

/// Adds the job id and token that CallAdmission checks to a client's call.
void AddJobMetadata(grpc::ClientContext& context, const std::string& job_id, const std::string& token);

}  // namespace est::net
