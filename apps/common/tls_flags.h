#pragma once
// The flags of the chief's store TLS, shared by est-train (which uses them) and est-launch
// (which passes them to its tasks as EST_TLS_* variables).

#include <CLI/CLI.hpp>

#include <map>
#include <string>

namespace est_apps {

/// PEM files of the store's TLS; all empty: no TLS from flags.
struct TlsFlags {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool require_client_cert = false;

  /// True when any TLS flag was given.
  bool any() const { return !ca_file.empty() || !cert_file.empty() || !key_file.empty() || require_client_cert; }
  /// The flags as the EST_TLS_* variables that MultiWorkerMirroredStrategy reads.
  std::map<std::string, std::string> environment() const {
    return {{"EST_TLS_CA_FILE", ca_file},
            {"EST_TLS_CERT_FILE", cert_file},
            {"EST_TLS_KEY_FILE", key_file},
            {"EST_TLS_REQUIRE_CLIENT_CERT", require_client_cert ? "1" : "0"}};
  }
};

/// Adds --tls-ca-file, --tls-cert-file, --tls-key-file and --tls-require-client-cert.
inline void AddTlsFlags(CLI::App& app, TlsFlags& flags) {
  const char* group = "TLS of the chief's rendezvous store and the ps tasks' variable services (default: EST_TLS_* "
                      "variables, else plain TCP)";
  app.add_option("--tls-ca-file", flags.ca_file, "PEM certificate authority every task trusts for the chief's store and the ps tasks")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_option("--tls-cert-file", flags.cert_file,
                 "PEM certificate the chief serves its store with, and each ps task its variables (and, with "
                 "--tls-require-client-cert, every task's client certificate)")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_option("--tls-key-file", flags.key_file, "PEM private key of --tls-cert-file")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_flag("--tls-require-client-cert", flags.require_client_cert,
               "Mutual TLS: the chief and the ps tasks refuse tasks without a certificate signed by --tls-ca-file")
      ->group(group);
}

}  // namespace est_apps
