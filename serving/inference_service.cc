#include "serving/inference_service.h"

#include <algorithm>
#include <cctype>

#include "serving/call_status.h"
#include "serving/kserve_codec.h"

namespace est::serving::detail {
namespace {

void AddTensorMetadata(const TensorSpec& spec, v2::ModelMetadataResponse::TensorMetadata& metadata) {
  metadata.set_name(spec.name);
  metadata.set_datatype(V2Datatype(spec.dtype));
  for (int64_t size : spec.shape) metadata.add_shape(size);
}

}  // namespace

void RecordCall(const ServiceContext& context, const char* api, const grpc::Status& status,
                std::chrono::steady_clock::time_point start) {
  if (context.metrics == nullptr) return;
  context.metrics->record(api, StatusCodeName(status.error_code()),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::string ServedNames(const ModelRegistry& models) {
  std::string names;
  for (const std::string& name : models.names()) names += (names.empty() ? "'" : ", '") + name + "'";
  return names;
}

std::string ServedVersions(const ServedModel& model) {
  std::string versions;
  for (const auto& [version, predictor] : model.versions())
    versions += (versions.empty() ? "" : ", ") + std::to_string(version);
  return versions;
}

grpc::Status InferenceService::find(const std::string& name, const std::string& version, Servable& servable) const {
  servable.model = context_.models->find(name);
  if (servable.model == nullptr)
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "Request for unknown model: '" + name +
                                                         "' is not found; this server serves " +
                                                         ServedNames(*context_.models));
  servable.name = name;
  if (version.empty()) {
    servable.predictor = servable.model->current();
    return grpc::Status::OK;
  }
  const bool number = version.size() <= 18 && std::all_of(version.begin(), version.end(), [](unsigned char c) {
                        return std::isdigit(c) != 0;
                      });
  servable.predictor = number ? servable.model->find(std::stoll(version)) : nullptr;
  servable.pinned = true;
  if (servable.predictor == nullptr)
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "Request for unknown model: '" + name + "' version " + version +
                                                         " is not found; versions served: " +
                                                         ServedVersions(*servable.model));
  return grpc::Status::OK;
}

grpc::Status InferenceService::ServerLive(grpc::ServerContext* context, const v2::ServerLiveRequest*,
                                          v2::ServerLiveResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  response->set_live(true);
  return grpc::Status::OK;
}

grpc::Status InferenceService::ServerReady(grpc::ServerContext* context, const v2::ServerReadyRequest*,
                                           v2::ServerReadyResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  response->set_ready(context_.ready->load());
  return grpc::Status::OK;
}

bool InferenceService::model_ready(const std::string& name, const std::string& version) const {
  // An unknown model or version is not ready, not an error (as Triton answers).
  Servable servable;
  return context_.ready->load() && find(name, version, servable).ok();
}

grpc::Status InferenceService::ModelReady(grpc::ServerContext* context, const v2::ModelReadyRequest* request,
                                          v2::ModelReadyResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  response->set_ready(model_ready(request->name(), request->version()));
  return grpc::Status::OK;
}

grpc::Status InferenceService::ServerMetadata(grpc::ServerContext* context, const v2::ServerMetadataRequest*,
                                              v2::ServerMetadataResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  response->set_name(kServerName);
  response->set_version(kServerVersion);
  return grpc::Status::OK;
}

grpc::Status InferenceService::ModelMetadata(grpc::ServerContext* context, const v2::ModelMetadataRequest* request,
                                             v2::ModelMetadataResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  return model_metadata(*request, *response);
}

grpc::Status InferenceService::model_metadata(const v2::ModelMetadataRequest& request,
                                              v2::ModelMetadataResponse& response) const {
  Servable servable;
  if (grpc::Status found = find(request.name(), request.version(), servable); !found.ok()) return found;
  const ExportManifest& manifest = servable.predictor->manifest();
  response.set_name(servable.name);
  if (servable.pinned) {
    response.add_versions(std::to_string(servable.predictor->version()));
  } else {
    for (const auto& [version, predictor] : servable.model->versions()) response.add_versions(std::to_string(version));
  }
  response.set_platform("torch_estimator");
  if (manifest.records_input.empty()) {
    for (const TensorSpec& input : manifest.inputs) AddTensorMetadata(input, *response.add_inputs());
  } else {
    auto& records = *response.add_inputs();
    records.set_name(manifest.records_input);
    records.set_datatype(kV2BytesDatatype);
    records.add_shape(-1);
  }
  for (const TensorSpec& output : manifest.outputs) AddTensorMetadata(output, *response.add_outputs());
  return grpc::Status::OK;
}

grpc::Status InferenceService::ModelInfer(grpc::ServerContext* context, const v2::ModelInferRequest* request,
                                          v2::ModelInferResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status = CheckRequestSize(request->ByteSizeLong(), context_.max_request_bytes);
  if (status.ok()) status = infer(*request, *response, CallDeadline(*context));
  RecordCall(context_, "kserve_grpc", status, start);
  return status;
}

grpc::Status InferenceService::infer(const v2::ModelInferRequest& request, v2::ModelInferResponse& response,
                                     std::chrono::steady_clock::time_point deadline) const {
  Servable servable;
  if (grpc::Status found = find(request.model_name(), request.model_version(), servable); !found.ok()) return found;
  try {
    const std::vector<std::string> outputs = RequestedInferOutputs(request, servable.predictor->manifest().outputs);
    int64_t version = 0;  // the version that answered: a reload may have swapped it in since find()
    const TensorMap predictions = servable.predict(
        RequestTensors(DecodeInferInputs(request, context_.max_request_bytes), *servable.predictor), deadline, &version);
    response.set_model_name(servable.name);
    response.set_model_version(std::to_string(version));
    response.set_id(request.id());
    EncodeInferOutputs(predictions, outputs, response);
    return grpc::Status::OK;
  } catch (...) {
    return StatusOfError(std::current_exception());
  }
}

}  // namespace est::serving::detail
