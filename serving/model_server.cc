#include "serving/model_server.h"

#include <grpcpp/server.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>

#include "common/logging.h"
#include "net/grpc_transport.h"
#include "serving/health_service.h"
#include "serving/inference_service.h"
#include "serving/model_service.h"
#include "serving/prediction_service.h"
#include "serving/rest_api.h"

namespace est::serving {

struct ModelServer::Impl {
  std::unique_ptr<ModelRegistry> models;
  std::atomic<bool> ready{false};
  std::unique_ptr<detail::InferenceService> inference;
  std::unique_ptr<detail::PredictionService> prediction;
  std::unique_ptr<detail::ModelService> model_service;
  std::unique_ptr<detail::HealthService> health;
  std::unique_ptr<grpc::Server> server;
  uint16_t port = 0;
  ServerMetrics metrics;
  std::unique_ptr<detail::RestApi> rest;
  std::unique_ptr<net::HttpServer> http;
  uint16_t rest_port = 0;
  std::once_flag shut_down;
};

ModelServer::ModelServer(ModelFn model_fn, const std::string& export_base, ModelServerOptions options)
    : ModelServer(std::move(model_fn),
                  {ModelConfig()
                       .base_path(export_base)
                       .version_policy(options.model().version_policy())
                       .version_labels(options.model().version_labels())},
                  options) {}

ModelServer::ModelServer(ModelFn model_fn, std::vector<ModelConfig> models, ModelServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  const int64_t max_bytes = options.max_request_bytes();
  EST_CHECK(max_bytes >= 1024 && max_bytes <= std::numeric_limits<int32_t>::max(), ConfigError,
            "max_request_bytes must be between 1024 and ", std::numeric_limits<int32_t>::max(), " (gRPC's limit), got ",
            max_bytes);
  if (models.size() == 1 && models.front().name().empty()) models.front().name(options.model_name());
  impl_->models = std::make_unique<ModelRegistry>(std::move(model_fn), options.model(), models);
  detail::ServiceContext context;
  context.models = impl_->models.get();
  context.token = options.token();
  context.max_request_bytes = max_bytes;
  context.ready = &impl_->ready;
  context.metrics = &impl_->metrics;
  impl_->inference = std::make_unique<detail::InferenceService>(context);
  impl_->prediction = std::make_unique<detail::PredictionService>(context);
  impl_->model_service = std::make_unique<detail::ModelService>(
      *impl_->prediction, [models = impl_->models.get()](const std::vector<ModelConfig>& configs) {
        return models->apply(configs);
      },
      options.token());
  impl_->health = std::make_unique<detail::HealthService>(
      [models = impl_->models.get()](const std::string& service) {
        return service == "inference.GRPCInferenceService" || service == "tensorflow.serving.PredictionService" ||
               service == "tensorflow.serving.ModelService" || models->find(service) != nullptr;
      },
      &impl_->ready);
  net::StartedServer started = net::StartGrpcServer(
      std::vector<grpc::Service*>{impl_->inference.get(), impl_->prediction.get(), impl_->model_service.get(),
                                  impl_->health.get()},
      options.host(), options.port(),
      options.tls(), static_cast<int>(std::min<int64_t>(2 * max_bytes, std::numeric_limits<int32_t>::max())),
      "est-serve");
  impl_->server = std::move(started.server);
  impl_->port = started.port;
  EST_CHECK(options.rest_port() >= -1 && options.rest_port() <= 65535, ConfigError,
            "rest_port must be -1 (none), 0 (a free port) or a port, got ", options.rest_port());
  if (options.rest_port() >= 0) {
    EST_CHECK(options.rest_request_timeout().count() > 0, ConfigError, "rest_request_timeout must be positive, got ",
              options.rest_request_timeout().count(), " ms");
    impl_->rest = std::make_unique<detail::RestApi>(*impl_->inference, *impl_->prediction, impl_->metrics,
                                                    *impl_->models, options.token(), options.rest_request_timeout());
    net::HttpServerOptions http;
    http.host = options.host();
    http.port = static_cast<uint16_t>(options.rest_port());
    http.tls = options.tls();
    http.max_body_bytes = max_bytes;
    http.what = "est-serve's REST API";
    impl_->http = std::make_unique<net::HttpServer>(
        [rest = impl_->rest.get()](const net::HttpRequest& request) { return rest->handle(request); }, http);
    impl_->rest_port = impl_->http->port();
  }
  impl_->ready = true;
  std::string served;
  for (const auto& [name, model] : impl_->models->models()) {
    served += (served.empty() ? "'" : ", '") + name + "' (versions " + detail::ServedVersions(*model) + " of '" +
              model->export_base() + "')";
  }
  Log().info("est-serve: serving {} at {}{} ({}, {})", served, net::GrpcAddress(options.host(), impl_->port),
             impl_->http ? ", REST at " + net::GrpcAddress(options.host(), impl_->rest_port) : std::string(),
             options.tls().cert_file.empty() ? "plain TCP" : "TLS", options.token().empty() ? "no token" : "token");
}

ModelServer::~ModelServer() { shutdown(); }

uint16_t ModelServer::port() const { return impl_->port; }
uint16_t ModelServer::rest_port() const { return impl_->rest_port; }
std::vector<std::string> ModelServer::model_names() const { return impl_->models->names(); }

std::shared_ptr<ServedModel> ModelServer::model(const std::string& name) const {
  const std::vector<std::string> names = impl_->models->names();
  EST_CHECK(!name.empty() || names.size() == 1, ConfigError, "ModelServer::model: name one of the models served (",
            detail::ServedNames(*impl_->models), ")");
  std::shared_ptr<ServedModel> model = impl_->models->find(name.empty() ? names.front() : name);
  EST_CHECK(model != nullptr, ConfigError, "ModelServer::model: no model '", name, "' is served; the models are ",
            detail::ServedNames(*impl_->models));
  return model;
}

bool ModelServer::reconfigure(const std::vector<ModelConfig>& models) { return impl_->models->apply(models); }

void ModelServer::shutdown(std::chrono::milliseconds grace) {
  std::call_once(impl_->shut_down, [&] {
    impl_->ready = false;
    impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
    impl_->http.reset();  // waits for the REST calls running
  });
}

void ModelServer::wait() { impl_->server->Wait(); }

}  // namespace est::serving
