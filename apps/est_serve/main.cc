// est-serve: serves exports (Estimator::export_saved_model, est-train --export) over gRPC, with
// both inference protocols on one port: the Open Inference Protocol (KServe v2, as tritonclient
// calls it) and TensorFlow Serving's PredictionService, and over REST. An export's traced program
// runs without the model's code; an export of the weights alone runs with a built-in model's
// model_fn (--model), or a canned estimator's (--model canned: of the spec est-train wrote into
// the export's assets, or of --spec).
// One export base, a model config file (TensorFlow Serving's) or a model
// repository (Triton's layout) says what is served.

#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "apps/common/number_checks.h"
#include "apps/common/parse_flags.h"
#include "apps/est_train/canned_model.h"
#include "apps/est_train/models.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "common/quoted_text.h"
#include "estimator/export/export_directory.h"
#include "serving/model_server.h"
#include "serving/predictor.h"

namespace {

struct Flags {
  std::string model;
  std::string spec;  ///< --model canned: est-train's spec file of the estimator
  std::string export_dir;
  std::string model_name;
  std::string model_config_file;
  std::string model_repository;
  int64_t config_poll_seconds = 0;
  std::string host = "127.0.0.1";
  int64_t port = 8500;
  std::string port_file;
  int64_t rest_port = -1;
  std::string rest_port_file;
  int64_t rest_request_timeout_ms = 60'000;
  std::string batching = "on";
  int64_t max_batch_size = 64;
  int64_t max_queue_delay_us = 2000;
  int64_t max_queue_size = 1024;
  int64_t instances = 1;
  int64_t reload_interval_ms = 1000;
  int64_t max_request_mib = 64;
  int64_t max_request_examples = 65536;
  std::string token_file;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  bool tls_require_client_cert = false;
};

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--model", flags.model,
                 "Run the exports with this built-in model's model_fn (est-train --model), as exports of the weights "
                 "alone need; by default each export's traced program runs, which needs no model code")
      ->check(CLI::IsMember({"fashion_mnist_cnn", "linear", "transformer_lm", "canned"}));
  app.add_option("--spec", flags.spec,
                 "--model canned: est-train's spec file of the canned estimator the exports are of (its columns and "
                 "parameters; its input files are not read); without it, the spec est-train wrote into the newest "
                 "export of --export-dir; requests carry tf.Example records (docs/canned.md)")
      ->check(CLI::ExistingFile);
  const char* models = "What is served (one of)";
  auto* export_dir =
      app.add_option("--export-dir,--model_base_path", flags.export_dir,
                     "An export base directory (MODEL_DIR/export/<exporter>, TensorFlow Serving's model base path): "
                     "its newest version is served, and newer ones as they appear")
          ->check(CLI::ExistingDirectory)
          ->group(models);
  auto* config_file =
      app.add_option("--model_config_file,--model-config-file", flags.model_config_file,
                     "TensorFlow Serving's model config file: a model_config_list in protobuf's text format naming "
                     "each model's name, base_path, model_version_policy and version_labels")
          ->check(CLI::ExistingFile)
          ->group(models);
  auto* repository = app.add_option("--model-repository,--model_repository", flags.model_repository,
                                    "A model repository (Triton's layout): each folder in it is an export base, "
                                    "served as the model of the folder's name (its newest version)")
                         ->check(CLI::ExistingDirectory)
                         ->group(models);
  export_dir->excludes(config_file)->excludes(repository);
  config_file->excludes(repository);
  app.add_option("--model_config_file_poll_wait_seconds,--repository-poll-secs", flags.config_poll_seconds,
                 "How often the model config file, or the model repository, is read again for models added, removed "
                 "or changed, seconds; 0: never")
      ->check(est_apps::IntegerIn<int64_t>(0, 86'400))
      ->capture_default_str();
  app.add_option("--model-name,--model_name", flags.model_name,
                 "The name clients ask for of --export-dir's model (default: the name the newest export records, else "
                 "\"default\")")
      ->excludes(config_file)
      ->excludes(repository);
  app.add_option("--host", flags.host, "The address to listen at")->capture_default_str();
  app.add_option("--port", flags.port, "The port to listen at; 0 picks a free one (see --port-file)")
      ->check(est_apps::IntegerIn<int64_t>(0, 65535))
      ->capture_default_str();
  app.add_option("--port-file", flags.port_file, "A file to write the port to once the server listens");
  app.add_option("--rest-port,--rest_api_port", flags.rest_port,
                 "The port of the REST API (KServe v2 over HTTP, TensorFlow Serving's REST API, /metrics) at --host; "
                 "-1: none; 0 picks a free one (see --rest-port-file)")
      ->check(est_apps::IntegerIn<int64_t>(-1, 65535))
      ->capture_default_str();
  app.add_option("--rest-port-file", flags.rest_port_file, "A file to write the REST port to once the server listens");
  app.add_option("--rest-request-timeout-ms", flags.rest_request_timeout_ms,
                 "How long a REST call waits for the model at most, milliseconds")
      ->check(est_apps::IntegerIn<int64_t>(1, 86'400'000))
      ->capture_default_str();
  app.add_option("--batching", flags.batching, "Batch concurrent requests along dimension 0")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--max-batch-size", flags.max_batch_size,
                 "The most examples in one batch, and in one model call: a larger request runs in parts of this size, "
                 "with other requests' batches between them")
      ->check(est_apps::IntegerIn<int64_t>(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-queue-delay-us", flags.max_queue_delay_us,
                 "How long the first request of a batch waits for more, microseconds")
      ->check(est_apps::IntegerIn<int64_t>(0, 10'000'000))
      ->capture_default_str();
  app.add_option("--max-queue-size", flags.max_queue_size,
                 "The most requests waiting for a batch; more are refused with RESOURCE_EXHAUSTED")
      ->check(est_apps::IntegerIn<int64_t>(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--instances", flags.instances,
                 "Copies of the model (Triton's instance count): that many batches, or requests without batching, run "
                 "at once")
      ->check(est_apps::IntegerIn<int64_t>(1, est::serving::kMaxModelInstances))
      ->capture_default_str();
  app.add_option("--reload-interval-ms", flags.reload_interval_ms,
                 "How often each model's export base is looked at for new versions; 0: never")
      ->check(est_apps::IntegerIn<int64_t>(0, 86'400'000))
      ->capture_default_str();
  app.add_option("--max-request-mib", flags.max_request_mib, "The largest request, MiB")
      ->check(est_apps::IntegerIn<int64_t>(1, 2047))
      ->capture_default_str();
  app.add_option("--max-request-examples", flags.max_request_examples,
                 "The most examples (rows along dimension 0) a request may carry; more are refused with "
                 "INVALID_ARGUMENT")
      ->check(est_apps::IntegerIn<int64_t>(1, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--token-file", flags.token_file,
                 "A file holding a secret each call must carry as 'authorization: Bearer <secret>'")
      ->check(CLI::ExistingFile);
  const char* tls = "TLS (default: plain TCP)";
  app.add_option("--tls-cert-file", flags.tls_cert_file, "PEM certificate this server presents")
      ->check(CLI::ExistingFile)
      ->group(tls);
  app.add_option("--tls-key-file", flags.tls_key_file, "PEM private key of --tls-cert-file")
      ->check(CLI::ExistingFile)
      ->group(tls);
  app.add_option("--tls-ca-file", flags.tls_ca_file, "PEM certificate authority of the clients' certificates")
      ->check(CLI::ExistingFile)
      ->group(tls);
  app.add_flag("--tls-require-client-cert", flags.tls_require_client_cert,
               "Mutual TLS: refuse clients without a certificate signed by --tls-ca-file")
      ->group(tls);
}

/// The canned estimator --export-dir's newest export was made of: the spec est-train wrote into
/// its assets (est_train::kCannedSpecAsset), every asset checked against the manifest first.
est_train::ModelRecipe CannedModelOfExport(const Flags& flags) {
  EST_CHECK(!flags.export_dir.empty(), est::ConfigError, "--model canned without --spec reads the estimator's spec "
            "from the export of --export-dir; with --model_config_file or --model-repository give --spec");
  const std::string version = est::serving::ResolveExportPath(flags.export_dir);
  bool has_spec = false;
  for (const est::ExportFileRecord& asset : est::ReadExportManifest(version).assets) {
    est::ReadExportFile(version, asset);  // its size and CRC32C
    has_spec = has_spec || asset.file == std::string(est::kExportAssetsDir) + "/" + est_train::kCannedSpecAsset;
  }
  EST_CHECK(has_spec, est::ConfigError, "--model canned: the export '", version, "' holds no ", est::kExportAssetsDir,
            "/", est_train::kCannedSpecAsset, " (exports of est-train --model canned do); give --spec, the "
            "estimator's spec file");
  const std::string assets = (std::filesystem::path(version) / est::kExportAssetsDir).string();
  est::Log().info("est-serve: the canned estimator of {}/{}", assets, est_train::kCannedSpecAsset);
  return est_train::CannedServingModel(
      est_train::ReadCannedSpec((std::filesystem::path(assets) / est_train::kCannedSpecAsset).string(),
                                /*list_files=*/false),
      assets);
}

/// The model_fn and serving input of a built-in model, or of --spec's canned estimator (no data is
/// read: serving needs none); none for "" (the exports' programs run).
est_train::ModelRecipe RecipeOf(const Flags& flags) {
  EST_CHECK(flags.spec.empty() || flags.model == "canned", est::ConfigError, "--spec applies to --model canned, not ",
            flags.model.empty() ? "to exports' traced programs" : "--model " + flags.model);
  if (flags.model.empty()) return {};
  if (flags.model == "canned") {
    if (flags.spec.empty()) return CannedModelOfExport(flags);
    const std::string folder = std::filesystem::absolute(flags.spec).parent_path().string();
    return est_train::CannedServingModel(est_train::ReadCannedSpec(flags.spec, /*list_files=*/false), folder);
  }
  if (flags.model == "linear") return est_train::Linear(1);
  if (flags.model == "transformer_lm") return est_train::TransformerLanguageModel("", false, 1, 0, 1);
  return est_train::FashionMnistCnn(est_train::FashionMnistInput{}, 1, 0, est_apps::CnnLayers::kLibTorch);
}

/// The secret of --token-file: its first line, which must not be empty.
std::string ReadToken(const std::string& path) {
  std::ifstream file(path);
  std::string token;
  std::getline(file, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  EST_CHECK(file.good() || file.eof(), est::ConfigError, "--token-file: cannot read '", path, "'");
  EST_CHECK(!token.empty(), est::ConfigError, "--token-file: '", path, "' is empty; expected the secret on its first line");
  return token;
}

/// The models the flags name: --export-dir's, --model_config_file's or --model-repository's.
std::vector<est::serving::ModelConfig> ModelsOf(const Flags& flags) {
  if (!flags.model_config_file.empty()) return est::serving::ReadModelConfigFile(flags.model_config_file);
  if (!flags.model_repository.empty()) return est::serving::ModelRepositoryConfigs(flags.model_repository);
  return {est::serving::ModelConfig().name(flags.model_name).base_path(flags.export_dir)};
}

/// Reads the model config file or repository again, and serves what it names when that changed.
/// What does not read or load is logged, and what is served stays.
void ApplyModels(const Flags& flags, est::serving::ModelServer& server,
                 std::vector<est::serving::ModelConfig>& applied) {
  try {
    std::vector<est::serving::ModelConfig> models = ModelsOf(flags);
    if (models == applied) return;
    server.reconfigure(models);
    applied = std::move(models);
  } catch (const est::Error& error) {
    est::Log().warn("est-serve: the models served stay as they were: {}", error.what());
  }
}

int Run(const Flags& flags) {
  EST_CHECK(!flags.export_dir.empty() || !flags.model_config_file.empty() || !flags.model_repository.empty(),
            est::ConfigError,
            "say what to serve: --export-dir (--model_base_path), --model_config_file or --model-repository");
  EST_CHECK(flags.config_poll_seconds == 0 || flags.export_dir.empty(), est::ConfigError,
            "--model_config_file_poll_wait_seconds reads a --model_config_file or --model-repository again; with "
            "--export-dir, --reload-interval-ms says how often new versions are looked for");
  est_train::ModelRecipe recipe = RecipeOf(flags);
  est::serving::ServedModelOptions model;
  auto predictor = est::serving::PredictorOptions().serving_input_fn(recipe.serving_input).instances(flags.instances);
  if (!flags.model.empty()) predictor.model({flags.model, est_train::kModelVersion});
  model.predictor(predictor);
  model.batching(flags.batching == "on")
      .batching_options(est::serving::BatchingOptions()
                            .max_batch_size(flags.max_batch_size)
                            .max_queue_delay(std::chrono::microseconds(flags.max_queue_delay_us))
                            .max_queue_size(flags.max_queue_size))
      .max_request_examples(flags.max_request_examples)
      .reload_interval(std::chrono::milliseconds(flags.reload_interval_ms));
  est::net::TlsOptions tls{flags.tls_ca_file, flags.tls_cert_file, flags.tls_key_file,
                                    flags.tls_require_client_cert};
  EST_CHECK(flags.tls_cert_file.empty() == flags.tls_key_file.empty(), est::ConfigError,
            "--tls-cert-file and --tls-key-file go together: give both for TLS, or neither");
  EST_CHECK(!flags.tls_require_client_cert || !flags.tls_ca_file.empty(), est::ConfigError,
            "--tls-require-client-cert needs --tls-ca-file, the authority of the clients' certificates");
  EST_CHECK(flags.tls_ca_file.empty() || !flags.tls_cert_file.empty(), est::ConfigError,
            "--tls-ca-file needs --tls-cert-file and --tls-key-file: the server's own certificate comes first");
  est::StopSignalGuard stop_signals;  // SIGTERM and SIGINT stop the server gracefully
  std::vector<est::serving::ModelConfig> applied = ModelsOf(flags);
  est::serving::ModelServer server(recipe.model_fn, applied,
                                   est::serving::ModelServerOptions()
                                       .host(flags.host)
                                       .port(static_cast<uint16_t>(flags.port))
                                       .tls(tls)
                                       .token(flags.token_file.empty() ? "" : ReadToken(flags.token_file))
                                       .model(model)
                                       .max_request_bytes(flags.max_request_mib << 20)
                                       .rest_port(static_cast<int32_t>(flags.rest_port))
                                       .rest_request_timeout(std::chrono::milliseconds(flags.rest_request_timeout_ms)));
  if (!flags.rest_port_file.empty())
    est::WriteFileAtomic(flags.rest_port_file, std::to_string(server.rest_port()) + "\n");
  if (!flags.port_file.empty()) est::WriteFileAtomic(flags.port_file, std::to_string(server.port()) + "\n");
  auto next_poll = std::chrono::steady_clock::now() + std::chrono::seconds(flags.config_poll_seconds);
  while (est::StopSignalGuard::pending() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (flags.config_poll_seconds == 0 || std::chrono::steady_clock::now() < next_poll) continue;
    ApplyModels(flags, server, applied);
    next_poll = std::chrono::steady_clock::now() + std::chrono::seconds(flags.config_poll_seconds);
  }
  std::fprintf(stderr, "est-serve: %s: stopping (calls running get 5 s)\n",
               est::StopSignalName(est::StopSignalGuard::pending()));
  server.shutdown(std::chrono::seconds(5));
  server.wait();
  return 0;
}

}  // namespace

// As est-train's: OpenSSL state of a TLS handshake cut short is left out of leak reports.
extern "C" const char* __lsan_default_suppressions() { return "leak:CRYPTO_zalloc\n"; }

int main(int argc, char** argv) {
  CLI::App app("est-serve: serve exports over gRPC and REST (KServe v2 and TensorFlow Serving protocols)",
               "est-serve");
  Flags flags;
  AddFlags(app, flags);
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "est-serve")) return *exit_status;
  try {
    return Run(flags);
  } catch (const est::Error& e) {
    std::fprintf(stderr, "est-serve: error: %s\n", e.what());
    return 1;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "est-serve: internal error: %s\n", est::OneLine(e.what_without_backtrace()).c_str());
    return 70;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "est-serve: internal error: %s\n", e.what());
    return 70;
  }
}
