// The chief's store server: one table of keys behind a mutex, StoreService over it, and the
// job id and token checked on every call.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/rendezvous/grpc_credentials.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/store_service.grpc.pb.h"

namespace est::distribute {
namespace {

namespace pb = est::rendezvous;

/// True when `a` equals `b`, in a time that does not depend on where they differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  const std::string& longer = a.size() >= b.size() ? a : b;
  for (size_t i = 0; i < longer.size(); ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned char>(x ^ y);
  }
  return difference == 0;
}

/// The keys and values, and the waits on them.
class KeyTable {
 public:
  void set(const std::string& key, const std::string& value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
  }
  int64_t add(const std::string& key, int64_t delta, bool* malformed) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string& stored = values_[key];
    int64_t value = 0;
    if (!stored.empty()) {
      try {
        size_t used = 0;
        value = std::stoll(stored, &used);
        *malformed = used != stored.size();
      } catch (const std::exception&) {
        *malformed = true;
      }
      if (*malformed) return 0;
    }
    value += delta;
    stored = std::to_string(value);
    changed_.notify_all();
    return value;
  }
  /// Waits until every key is set or `deadline`; returns the keys still missing.
  std::vector<std::string> wait(const std::vector<std::string>& keys, std::chrono::steady_clock::time_point deadline,
                                const grpc::ServerContext& context) {
    std::unique_lock<std::mutex> lock(mutex_);
    return wait_locked(lock, keys, deadline, context);
  }
  /// Waits as wait() for `key` and sets `value` to its value, in one hold of the lock (a
  /// delete cannot come between); false when the key was not set in time.
  bool get(const std::string& key, std::chrono::steady_clock::time_point deadline, const grpc::ServerContext& context,
           std::string* value) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!wait_locked(lock, {key}, deadline, context).empty()) return false;
    *value = values_.at(key);
    return true;
  }
  bool erase(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    return values_.erase(key) > 0;
  }
  std::vector<std::string> list(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> keys;
    for (auto it = values_.lower_bound(prefix); it != values_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it)
      keys.push_back(it->first);
    return keys;
  }

 private:
  std::vector<std::string> wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                                       std::chrono::steady_clock::time_point deadline,
                                       const grpc::ServerContext& context) {
    for (;;) {
      std::vector<std::string> missing;
      for (const auto& key : keys)
        if (!values_.count(key)) missing.push_back(key);
      if (missing.empty() || context.IsCancelled() || std::chrono::steady_clock::now() >= deadline) return missing;
      // Wakes at the deadline, on a change, and every 100 ms to notice a cancelled call.
      changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

class StoreServiceImpl final : public pb::StoreService::Service {
 public:
  explicit StoreServiceImpl(GrpcStoreOptions options) : options_(std::move(options)) {}
  /// The port the server listens on, for the log (the options may say 0).
  void set_port(uint16_t port) { port_ = port; }

  grpc::Status Set(grpc::ServerContext* context, const pb::SetRequest* request, pb::SetReply*) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    table_.set(request->key(), request->value());
    return grpc::Status::OK;
  }
  grpc::Status Get(grpc::ServerContext* context, const pb::GetRequest* request, pb::GetReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    if (!table_.get(request->key(), deadline(*context, request->timeout_ms()), *context, reply->mutable_value()))
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "key '" + request->key() + "' was not set in time");
    return grpc::Status::OK;
  }
  grpc::Status Add(grpc::ServerContext* context, const pb::AddRequest* request, pb::AddReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    bool malformed = false;
    reply->set_value(table_.add(request->key(), request->delta(), &malformed));
    if (malformed)
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "key '" + request->key() + "' holds no integer");
    return grpc::Status::OK;
  }
  grpc::Status Check(grpc::ServerContext* context, const pb::CheckRequest* request, pb::CheckReply* reply) override {
    const std::vector<std::string> keys(request->keys().begin(), request->keys().end());
    if (grpc::Status refused = admit(*context, keys); !refused.ok()) return refused;
    reply->set_all_set(table_.wait(keys, std::chrono::steady_clock::now(), *context).empty());
    return grpc::Status::OK;
  }
  grpc::Status Wait(grpc::ServerContext* context, const pb::WaitRequest* request, pb::WaitReply* reply) override {
    const std::vector<std::string> keys(request->keys().begin(), request->keys().end());
    if (grpc::Status refused = admit(*context, keys); !refused.ok()) return refused;
    for (auto& key : table_.wait(keys, deadline(*context, request->timeout_ms()), *context)) reply->add_missing(key);
    return grpc::Status::OK;
  }
  grpc::Status Delete(grpc::ServerContext* context, const pb::DeleteRequest* request, pb::DeleteReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->key()}); !refused.ok()) return refused;
    reply->set_deleted(table_.erase(request->key()));
    return grpc::Status::OK;
  }
  grpc::Status List(grpc::ServerContext* context, const pb::ListRequest* request, pb::ListReply* reply) override {
    if (grpc::Status refused = admit(*context, {request->prefix()}); !refused.ok()) return refused;
    for (auto& key : table_.list(request->prefix())) reply->add_keys(std::move(key));
    return grpc::Status::OK;
  }

 private:
  /// OK for a call of this job with the job's token and keys within the limit; otherwise
  /// the refusal, logged once per peer.
  grpc::Status admit(const grpc::ServerContext& context, const std::vector<std::string>& keys) {
    const auto& metadata = context.client_metadata();
    auto value_of = [&](const char* name) -> std::string {
      auto it = metadata.find(name);
      return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
    };
    const std::string job_id = value_of("est-job-id");
    if (!ConstantTimeEquals(job_id, options_.job_id) || !ConstantTimeEquals(value_of("est-job-token"), options_.token))
      return refuse(context, job_id != options_.job_id ? "job id '" + job_id + "' is not this job's ('" +
                                                             options_.job_id + "')"
                                                       : "the job token is missing or wrong");
    for (const auto& key : keys)
      if (key.size() > static_cast<size_t>(options_.max_key_bytes))
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "a key of " + std::to_string(key.size()) + " bytes; at most " +
                                std::to_string(options_.max_key_bytes));
    return grpc::Status::OK;
  }

  grpc::Status refuse(const grpc::ServerContext& context, const std::string& why) {
    const std::string peer = context.peer();
    {
      std::lock_guard<std::mutex> lock(refused_mutex_);
      if (refused_peers_.insert(peer).second)
        Log().warn("store of job '{}' at {}:{}: refused a call from {}: {}", options_.job_id, options_.host,
                   port_.load(), peer, why);
    }
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "refused by the store of job '" + options_.job_id +
                                                                 "': " + why);
  }

  static std::chrono::steady_clock::time_point deadline(const grpc::ServerContext& context, int64_t timeout_ms) {
    const auto now = std::chrono::steady_clock::now();
    const auto asked = now + std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0));
    const auto call_left = context.deadline() - std::chrono::system_clock::now();
    return std::min(asked, now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(call_left));
  }

  GrpcStoreOptions options_;
  std::atomic<uint16_t> port_{0};
  KeyTable table_;
  std::mutex refused_mutex_;
  std::set<std::string> refused_peers_;
};

class GrpcStoreServerImpl final : public GrpcStoreServer {
 public:
  explicit GrpcStoreServerImpl(const GrpcStoreOptions& options) : service_(options) {
    const std::string address = options.host + ":" + std::to_string(options.port);
    grpc::ServerBuilder builder;
    int picked = 0;
    builder.AddListeningPort(address, detail::ServerCredentials(options.tls), &picked);
    builder.RegisterService(&service_);
    builder.SetMaxReceiveMessageSize(options.max_value_bytes + options.max_key_bytes + 1024);
    builder.SetMaxSendMessageSize(options.max_value_bytes + options.max_key_bytes + 1024);
    server_ = builder.BuildAndStart();
    EST_CHECK(server_ != nullptr && picked > 0, CommunicationError, "cannot serve the job's store at ", address,
              ": the port is taken or the host is not this machine's");
    port_ = static_cast<uint16_t>(picked);
    service_.set_port(port_);
  }
  ~GrpcStoreServerImpl() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  }
  uint16_t port() const override { return port_; }

 private:
  StoreServiceImpl service_;
  std::unique_ptr<grpc::Server> server_;
  uint16_t port_ = 0;
};

}  // namespace

std::unique_ptr<GrpcStoreServer> GrpcStoreServer::Start(const GrpcStoreOptions& options) {
  return std::make_unique<GrpcStoreServerImpl>(options);
}

}  // namespace est::distribute
