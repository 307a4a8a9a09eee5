#pragma once
/// est::serving::ModelServer: est-serve as a library. A program calls it with an export base
/// directory (and the model_fn that made it, or nullptr to run the exports' traced programs); it
/// serves the newest version over gRPC with both inference protocols on one port: the Open
/// Inference Protocol (KServe v2, inference.GRPCInferenceService, as tritonclient calls it) and
/// TensorFlow Serving's PredictionService (Predict, GetModelMetadata) and ModelService
/// (GetModelStatus), and gRPC's grpc.health.v1.Health, with dynamic batching, hot reload, a
/// bearer token and TLS; and both protocols over HTTP/JSON, with Prometheus metrics, where asked.

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
  /// The name clients ask for; when empty, the export's model name, or "default" (TensorFlow
  /// Serving's) for an export of no name.
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
  /// The most bytes a request may carry (gRPC's message limit, the REST API's body limit), and
  /// one input may decode to.
  TORCH_ARG(int64_t, max_request_bytes) = int64_t{64} << 20;
  /// The port of the REST API (KServe v2 over HTTP, TensorFlow Serving's REST API, /metrics) at
  /// `host`, with the same TLS and token; -1: none; 0: a free one (ModelServer::rest_port()).
  TORCH_ARG(int32_t, rest_port) = -1;
  /// How long a REST call waits for the model at most (HTTP carries no deadline of the client's).
  TORCH_ARG(std::chrono::milliseconds, rest_request_timeout) = std::chrono::seconds(60);
};

/// A gRPC server of one model, and its REST API where asked for.
class ModelServer {
 public:
  /// Loads the newest version under `export_base` (CheckpointError as Predictor's), with
  /// `model_fn` or, where it is nullptr, as the export's traced program, and
  /// listens (CommunicationError when it cannot; ConfigError for bad options).
  ModelServer(ModelFn model_fn, const std::string& export_base, ModelServerOptions options = {});
  /// shutdown() with its default grace.
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  /// The port the server listens at.
  uint16_t port() const;
  /// The REST API's port; 0 without one.
  uint16_t rest_port() const;
  /// The name clients ask for.
  const std::string& model_name() const;
  /// The model served (its version now, its counts).
  const ServedModel& model() const;
  ServedModel& model();

  /// Stops taking calls: ServerReady turns false, calls running get `grace` to finish, then
  /// are cancelled; the REST API's calls running finish. Idempotent.
  void shutdown(std::chrono::milliseconds grace = std::chrono::seconds(5));
  /// Blocks until shutdown() has been called (from another thread) and the server stopped.
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace est::serving
