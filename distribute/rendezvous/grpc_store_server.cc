// The chief's store server: one table of keys behind a mutex, StoreService over it, and the
// job id and token checked on every call.

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "common/error.h"
#include "net/call_admission.h"
#include "net/grpc_transport.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/key_table.h"
#include "distribute/rendezvous/store_service.grpc.pb.h"

namespace est::distribute {
namespace {

namespace pb = est::rendezvous;

class StoreServiceImpl final : public pb::StoreService::Service {
 public:
  explicit StoreServiceImpl(GrpcStoreOptions options)
      : options_(std::move(options)), admission_("store", options_.job_id, options_.token, options_.host) {}
  /// The gate in front of the server: its port, for the log (the options may say 0), and
  /// the peers of calls.
  void set_gate(const net::ConnectionGate& gate) {
    admission_.set_port(gate.port());
    admission_.set_gate(&gate);
  }

  grpc::Status Set(grpc::ServerContext* context, const pb::SetRequest* request, pb::SetReply*) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    table_.set(request->key(), request->value());
    return grpc::Status::OK;
  }
  grpc::Status Get(grpc::ServerContext* context, const pb::GetRequest* request, pb::GetReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    std::optional<std::string> value =
        table_.get(request->key(), deadline(*context, request->timeout_ms()), CancelledBy(*context));
    if (!value) return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "key '" + request->key() + "' was not set in time");
    *reply->mutable_value() = *std::move(value);
    return grpc::Status::OK;
  }
  grpc::Status Add(grpc::ServerContext* context, const pb::AddRequest* request, pb::AddReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    const std::optional<int64_t> value = table_.add(request->key(), request->delta());
    if (!value) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "key '" + request->key() + "' holds no integer");
    reply->set_value(*value);
    return grpc::Status::OK;
  }
  grpc::Status Check(grpc::ServerContext* context, const pb::CheckRequest* request, pb::CheckReply* reply) override {
    const std::vector<std::string> keys(request->keys().begin(), request->keys().end());
    if (grpc::Status refused = admit(*context, keys); !refused.ok()) return refused;
    reply->set_all_set(table_.wait(keys, std::chrono::steady_clock::now()).empty());
    return grpc::Status::OK;
  }
  grpc::Status Wait(grpc::ServerContext* context, const pb::WaitRequest* request, pb::WaitReply* reply) override {
    const std::vector<std::string> keys(request->keys().begin(), request->keys().end());
    if (grpc::Status refused = admit(*context, keys); !refused.ok()) return refused;
    for (auto& key : table_.wait(keys, deadline(*context, request->timeout_ms()), CancelledBy(*context)))
      reply->add_missing(std::move(key));
    return grpc::Status::OK;
  }
  grpc::Status Delete(grpc::ServerContext* context, const pb::DeleteRequest* request, pb::DeleteReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    reply->set_deleted(table_.remove(request->key()));
    return grpc::Status::OK;
  }
  grpc::Status List(grpc::ServerContext* context, const pb::ListRequest* request, pb::ListReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->prefix()}); !refused.ok()) return refused;
    for (auto& key : table_.list(request->prefix())) reply->add_keys(std::move(key));
    return grpc::Status::OK;
  }

 private:
  /// OK for a call of this job with the job's token and keys within the limit; otherwise
  /// the refusal.
  grpc::Status admit(grpc::ServerContext& context, const std::vector<std::string>& keys) {
    if (grpc::Status refused = admission_.admit(context); !refused.ok()) return refused;
    for (const auto& key : keys)
      if (key.size() > static_cast<size_t>(options_.max_key_bytes))
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "a key of " + std::to_string(key.size()) + " bytes; at most " +
                                std::to_string(options_.max_key_bytes));
    return grpc::Status::OK;
  }

  static detail::KeyTable::Cancelled CancelledBy(const grpc::ServerContext& context) {
    return [&context] { return context.IsCancelled(); };
  }

  static std::chrono::steady_clock::time_point deadline(const grpc::ServerContext& context, int64_t timeout_ms) {
    const auto now = std::chrono::steady_clock::now();
    const auto asked = now + std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0));
    const auto call_left = context.deadline() - std::chrono::system_clock::now();
    return std::min(asked, now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(call_left));
  }

  GrpcStoreOptions options_;
  net::CallAdmission admission_;
  detail::KeyTable table_;
};

class GrpcStoreServerImpl final : public GrpcStoreServer {
 public:
  explicit GrpcStoreServerImpl(const GrpcStoreOptions& options)
      : service_(options),
        gate_(net::ConnectionGate::Listen(options.host, options.port, "the job's store",
                                             net::ConnectionGateOptions().with_tls(!options.tls.cert_file.empty()))) {
    service_.set_gate(*gate_);
    server_ = net::StartGrpcServerBehind(*gate_, service_, options.tls,
                                         options.max_value_bytes + options.max_key_bytes + 1024, "the job's store");
  }
  ~GrpcStoreServerImpl() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  }
  uint16_t port() const override { return gate_->port(); }

 private:
  StoreServiceImpl service_;
  std::unique_ptr<net::ConnectionGate> gate_;  ///< outlives the server, which it feeds
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace

std::unique_ptr<GrpcStoreServer> GrpcStoreServer::Start(const GrpcStoreOptions& options) {
  return std::make_unique<GrpcStoreServerImpl>(options);
}

}  // namespace est::distribute
