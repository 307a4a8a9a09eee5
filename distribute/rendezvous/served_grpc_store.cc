// The chief's store for the chief's own rank: the server, and a client of it.

#include "common/error.h"
#include "distribute/rendezvous/grpc_store.h"

namespace est::distribute {
namespace {

class ServedStore final : public ServedGrpcStore {
 public:
  explicit ServedStore(GrpcStoreOptions options) : server_(StartServer(options)) {
    options.port = server_->port();
    client_ = CreateGrpcStore(options);
  }

  void set(const std::string& key, const std::string& value) override { client_->set(key, value); }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    return client_->get(key, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override { return client_->add(key, delta); }
  bool check(const std::vector<std::string>& keys) override { return client_->check(keys); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    client_->wait(keys, timeout);
  }
  bool remove(const std::string& key) override { return client_->remove(key); }
  std::vector<std::string> list(const std::string& prefix) override { return client_->list(prefix); }
  std::string describe() const override { return client_->describe(); }
  uint16_t port() const override { return server_->port(); }

 private:
  // The chief's own rank is a client too: over TLS it must trust the server's authority.
  static std::unique_ptr<GrpcStoreServer> StartServer(const GrpcStoreOptions& options) {
    EST_CHECK(options.tls.cert_file.empty() || !options.tls.ca_file.empty(), ConfigError,
              "store TLS: the chief serves with the certificate '", options.tls.cert_file,
              "', but no certificate authority is given: every task, the chief's own rank included, needs the "
              "authority that signed it (ca_file, EST_TLS_CA_FILE, --tls-ca-file)");
    return GrpcStoreServer::Start(options);
  }

  std::unique_ptr<GrpcStoreServer> server_;
  std::shared_ptr<Store> client_;
};

}  // namespace

std::shared_ptr<ServedGrpcStore> ServeGrpcStore(const GrpcStoreOptions& options) {
  return std::make_shared<ServedStore>(options);
}

}  // namespace est::distribute
