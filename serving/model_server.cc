#include "serving/model_server.h"

#include <grpcpp/server.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>

#include "common/logging.h"
#include "net/grpc_transport.h"
#include "serving/inference_service.h"
#include "serving/prediction_service.h"

namespace est::serving {

struct ModelServer::Impl {
  std::unique_ptr<ServedModel> model;
  std::string model_name;
  std::atomic<bool> ready{false};
  std::unique_ptr<detail::InferenceService> inference;
  std::unique_ptr<detail::PredictionService> prediction;
  std::unique_ptr<grpc::Server> server;
  uint16_t port = 0;
  std::once_flag shut_down;
};

ModelServer::ModelServer(ModelFn model_fn, const std::string& export_base, ModelServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  const int64_t max_bytes = options.max_request_bytes();
  EST_CHECK(max_bytes >= 1024 && max_bytes <= std::numeric_limits<int32_t>::max(), ConfigError,
            "max_request_bytes must be between 1024 and ", std::numeric_limits<int32_t>::max(), " (gRPC's limit), got ",
            max_bytes);
  impl_->model = std::make_unique<ServedModel>(std::move(model_fn), export_base, options.model());
  impl_->model_name = options.model_name().empty() ? impl_->model->current()->manifest().model.name
                                                   : options.model_name();
  detail::ServiceContext context;
  context.model = impl_->model.get();
  context.model_name = impl_->model_name;
  context.token = options.token();
  context.max_request_bytes = max_bytes;
  context.ready = &impl_->ready;
  impl_->inference = std::make_unique<detail::InferenceService>(context);
  impl_->prediction = std::make_unique<detail::PredictionService>(context);
  net::StartedServer started = net::StartGrpcServer(
      std::vector<grpc::Service*>{impl_->inference.get(), impl_->prediction.get()}, options.host(), options.port(),
      options.tls(), static_cast<int>(std::min<int64_t>(2 * max_bytes, std::numeric_limits<int32_t>::max())),
      "model '" + impl_->model_name + "'");
  impl_->server = std::move(started.server);
  impl_->port = started.port;
  impl_->ready = true;
  Log().info("est-serve: serving model '{}' version {} from '{}' at {} ({}, {})", impl_->model_name,
             impl_->model->current()->version(), export_base,
             net::GrpcAddress(options.host(), impl_->port),
             options.tls().cert_file.empty() ? "plain TCP" : "TLS", options.token().empty() ? "no token" : "token");
}

ModelServer::~ModelServer() { shutdown(); }

uint16_t ModelServer::port() const { return impl_->port; }
const std::string& ModelServer::model_name() const { return impl_->model_name; }
const ServedModel& ModelServer::model() const { return *impl_->model; }
ServedModel& ModelServer::model() { return *impl_->model; }

void ModelServer::shutdown(std::chrono::milliseconds grace) {
  std::call_once(impl_->shut_down, [&] {
    impl_->ready = false;
    impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  });
}

void ModelServer::wait() { impl_->server->Wait(); }

}  // namespace est::serving
