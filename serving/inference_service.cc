#include "serving/inference_service.h"

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

grpc::Status InferenceService::find(const std::string& name, const std::string& version,
                                    std::shared_ptr<const Predictor>& predictor) const {
  if (name != context_.model_name)
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "Request for unknown model: '" + name +
                                                         "' is not found; this server serves '" +
                                                         context_.model_name + "'");
  predictor = context_.model->current();
  const std::string served = std::to_string(predictor->version());
  if (!version.empty() && version != served)
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "'" + name + "' version " + version + " is not found; version " + served + " is served");
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
  std::shared_ptr<const Predictor> predictor;
  return context_.ready->load() && find(name, version, predictor).ok();
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
  std::shared_ptr<const Predictor> predictor;
  if (grpc::Status found = find(request.name(), request.version(), predictor); !found.ok()) return found;
  const ExportManifest& manifest = predictor->manifest();
  response.set_name(context_.model_name);
  response.add_versions(std::to_string(predictor->version()));
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
  std::shared_ptr<const Predictor> predictor;
  if (grpc::Status found = find(request.model_name(), request.model_version(), predictor); !found.ok()) return found;
  try {
    const std::vector<std::string> outputs = RequestedInferOutputs(request, predictor->manifest().outputs);
    int64_t version = 0;  // the version that answered: a reload may have swapped it in since find()
    const TensorMap predictions = context_.model->predict(
        RequestTensors(DecodeInferInputs(request, context_.max_request_bytes), *predictor), deadline, &version);
    response.set_model_name(context_.model_name);
    response.set_model_version(std::to_string(version));
    response.set_id(request.id());
    EncodeInferOutputs(predictions, outputs, response);
    return grpc::Status::OK;
  } catch (...) {
    return StatusOfError(std::current_exception());
  }
}

}  // namespace est::serving::detail
