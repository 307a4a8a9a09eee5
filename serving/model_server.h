#pragma once
/// est::serving::ModelServer: est-serve as a library. A program calls it with the models to serve
/// (each an export base directory, a version policy and labels) and the model_fn that made them,
/// or nullptr to run the exports' traced programs; it serves them over gRPC with both inference
/// protocols on one port: the Open Inference Protocol (KServe v2, inference.GRPCInferenceService,
/// as tritonclient calls it) and TensorFlow Serving's PredictionService (Predict,
/// GetModelMetadata) and ModelService (GetModelStatus, HandleReloadConfigRequest), and gRPC's
/// grpc.health.v1.Health, with dynamic batching, hot reload, a bearer token and TLS; and both
/// protocols over HTTP/JSON, with Prometheus metrics, where asked.

#include <torch/arg.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "net/tls_options.h"
#include "serving/model_config.h"
#include "serving/served_model.h"

namespace est::serving {

/// Where and how a ModelServer serves.
struct ModelServerOptions {
  /// The name clients ask for of the model a server of one export base serves; when empty, the
  /// export's model name, or "default" (TensorFlow Serving's) for an export of no name.
  TORCH_ARG(std::string, model_name);
  /// The address the server listens at; port 0 picks a free one (ModelServer::port()).
  TORCH_ARG(std::string, host) = "127.0.0.1";
  TORCH_ARG(uint16_t, port) = 8500;
  /// TLS with this server's certificate (and clients' certificates under mutual TLS), as the
  /// control plane takes it; plain TCP when no certificate is given.
  TORCH_ARG(net::TlsOptions, tls);
  /// A secret each call must carry as the metadata "authorization: Bearer <token>"; none when empty.
  TORCH_ARG(std::string, token);
  /// How each model is loaded, batched and reloaded (a ModelConfig's version policy and labels
  /// take the place of these).
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

/// A gRPC server of models, and its REST API where asked for.
class ModelServer {
 public:
  /// Loads `models` (ModelRegistry's errors), with `model_fn` or, where it is nullptr, as the
  /// exports' traced programs, and listens (CommunicationError when it cannot; ConfigError for bad
  /// options). A lone model of no name is named as options.model_name() says.
  ModelServer(ModelFn model_fn, std::vector<ModelConfig> models, ModelServerOptions options = {});
  /// One model: the versions under `export_base` that options.model()'s version policy names.
  ModelServer(ModelFn model_fn, const std::string& export_base, ModelServerOptions options = {});
  /// shutdown() with its default grace.
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  /// The port the server listens at.
  uint16_t port() const;
  /// The REST API's port; 0 without one.
  uint16_t rest_port() const;
  /// The names clients ask for, in order.
  std::vector<std::string> model_names() const;
  /// The model `name` serves (its versions now, its counts); with "", the only one. ConfigError
  /// naming the models served when there is no such model, or several and no name.
  std::shared_ptr<ServedModel> model(const std::string& name = "") const;
  /// Serves `models` from now on without a restart (ModelRegistry::apply: nothing changes when
  /// one does not load, and the error names it). True when anything changed.
  bool reconfigure(const std::vector<ModelConfig>& models);

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
