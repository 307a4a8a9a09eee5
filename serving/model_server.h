#pragma once
/// est::serving::ModelServer: est-serve as a library. A user's program calls it with its
/// model_fn and an export base directory; it serves the newest version over gRPC with both
/// inference protocols on one port: the Open Inference Protocol (KServe v2,
/// inference.GRPCInferenceService, as tritonclient calls it) and TensorFlow Serving's
/// PredictionService (Predict, GetModelMetadata), with dynamic batching, hot reload, a
/// bearer token and TLS.

#include <torch/arg.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "net/tls_options.h"
#include "serving/served_model.h"

namespace est::serving {

/// Where and how a ModelServer serves.
struct ModelServerOptions {
  /// The name clients ask for; the export's model name when empty.
  TORCH_ARG(std::string, model_name);
  /// The address the server listens at; port 0 picks a free one (ModelServer::port()).
  TORCH_ARG(std::string, host) = "127.0.0.1";
  TORCH_ARG(uint16_t, port) = 8500;
  /// TLS with this server's certificate (and clients' certificates under mutual TLS), as the
  /// control plane takes it; plain TCP when no certificate is given.
  TORCH_ARG(net::TlsOptions, tls);
  /// A secret each call must carry as the metadata "authorization: Bearer <token>"; none when empty.
  TORCH_ARG(std::string, token);
  /// How the model is loaded, batched and reloaded.
  TORCH_ARG(ServedModelOptions, model);
  /// The most bytes a request may carry (gRPC's message limit), and one input may decode to.
  TORCH_ARG(int64_t, max_request_bytes) = int64_t{64} << 20;
};

/// A gRPC server of one model.
class ModelServer {
 public:
  /// Loads the newest version under `export_base` (CheckpointError as Predictor's) and
  /// listens (CommunicationError when it cannot; ConfigError for bad options).
  ModelServer(ModelFn model_fn, const std::string& export_base, ModelServerOptions options = {});
  /// shutdown() with its default grace.
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  /// The port the server listens at.
  uint16_t port() const;
  /// The name clients ask for.
  const std::string& model_name() const;
  /// The model served (its version now, its counts).
  const ServedModel& model() const;
  ServedModel& model();

  /// Stops taking calls: ServerReady turns false, calls running get `grace` to finish, then
  /// are cancelled. Idempotent.
  void shutdown(std::chrono::milliseconds grace = std::chrono::seconds(5));
  /// Blocks until shutdown() has been called (from another thread) and the server stopped.
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace est::serving
