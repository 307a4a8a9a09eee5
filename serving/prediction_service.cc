#include "serving/prediction_service.h"

#include <set>

#include "serving/call_status.h"
#include "serving/tf_serving_codec.h"

namespace est::serving::detail {
namespace {

/// The type URL clients unpack GetModelMetadata's "signature_def" by.
constexpr const char* kSignatureDefMapType = "type.googleapis.com/tensorflow.serving.SignatureDefMap";

/// The predictions `request` asks for (output_filter; all when empty), by name.
std::vector<std::string> FilteredOutputs(const tf::PredictRequest& request, const std::vector<TensorSpec>& outputs) {
  std::vector<std::string> names;
  if (request.output_filter().empty()) {
    for (const TensorSpec& output : outputs) names.push_back(output.name);
    return names;
  }
  std::set<std::string> seen;
  for (const std::string& name : request.output_filter()) {
    bool known = false;
    for (const TensorSpec& output : outputs) known = known || output.name == name;
    EST_CHECK(known, RequestError, "output tensor alias not found in signature: '", name, "'; the signature has ",
              QuotedNames(outputs));
    EST_CHECK(seen.insert(name).second, RequestError, "duplicate output tensor alias: '", name, "'");
    names.push_back(name);
  }
  return names;
}

}  // namespace

grpc::Status PredictionService::find(const tf::ModelSpec& spec, std::shared_ptr<const Predictor>& predictor) const {
  if (spec.name() != context_.model_name)
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "Servable not found for request: Latest(" + spec.name() +
                                                         "); this server serves '" + context_.model_name + "'");
  predictor = context_.model->current();
  if (spec.has_version() && spec.version().value() != predictor->version())
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "Servable not found for request: Specific(" + spec.name() + ", " +
                            std::to_string(spec.version().value()) + "); version " +
                            std::to_string(predictor->version()) + " is served");
  if (spec.version_choice_case() == tf::ModelSpec::kVersionLabel)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "version label '" + spec.version_label() + "' is not known: est-serve has no version labels");
  if (!spec.signature_name().empty() && spec.signature_name() != kDefaultSignature)
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "Serving signature key \"" + spec.signature_name() +
                                                                   "\" not found; the model has \"" +
                                                                   kDefaultSignature + "\"");
  return grpc::Status::OK;
}

grpc::Status PredictionService::Predict(grpc::ServerContext* context, const tf::PredictRequest* request,
                                        tf::PredictResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status = CheckRequestSize(request->ByteSizeLong(), context_.max_request_bytes);
  if (status.ok()) status = predict(*request, *response, CallDeadline(*context));
  RecordCall(context_, "tf_serving_grpc", status, start);
  return status;
}

grpc::Status PredictionService::predict(const tf::PredictRequest& request, tf::PredictResponse& response,
                                        std::chrono::steady_clock::time_point deadline) const {
  if (!request.has_model_spec()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  std::shared_ptr<const Predictor> predictor;
  if (grpc::Status found = find(request.model_spec(), predictor); !found.ok()) return found;
  try {
    const std::vector<std::string> outputs = FilteredOutputs(request, predictor->manifest().outputs);
    int64_t version = 0;  // the version that answered: a reload may have swapped it in since find()
    const TensorMap predictions = context_.model->predict(
        RequestTensors(DecodePredictInputs(request, context_.max_request_bytes), *predictor), deadline, &version);
    for (const std::string& name : outputs) TensorToProto(predictions.at(name), (*response.mutable_outputs())[name]);
    tf::ModelSpec& spec = *response.mutable_model_spec();
    spec.set_name(context_.model_name);
    spec.mutable_version()->set_value(version);
    spec.set_signature_name(kDefaultSignature);
    return grpc::Status::OK;
  } catch (...) {
    return StatusOfError(std::current_exception());
  }
}

grpc::Status PredictionService::model_status(const tf::ModelSpec& spec, tf::GetModelStatusResponse& response) const {
  std::shared_ptr<const Predictor> predictor;
  // The status of a model asks for no signature: only the name and version are checked.
  tf::ModelSpec named = spec;
  named.clear_signature_name();
  if (grpc::Status found = find(named, predictor); !found.ok()) return found;
  tf::ModelVersionStatus& status = *response.add_model_version_status();
  status.set_version(predictor->version());
  status.set_state(tf::ModelVersionStatus::AVAILABLE);
  status.mutable_status()->set_error_code(0);  // OK
  return grpc::Status::OK;
}

grpc::Status PredictionService::GetModelMetadata(grpc::ServerContext* context,
                                                 const tf::GetModelMetadataRequest* request,
                                                 tf::GetModelMetadataResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  if (!request->has_model_spec()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  std::shared_ptr<const Predictor> predictor;
  if (grpc::Status found = find(request->model_spec(), predictor); !found.ok()) return found;
  if (request->metadata_field().empty())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "GetModelMetadataRequest must specify at least one metadata_field: 'signature_def'");
  for (const std::string& field : request->metadata_field())
    if (field != "signature_def")
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "Metadata field " + field + " is not supported; expected 'signature_def'");
  tf::SignatureDefMap signatures;
  SignatureDefMapOf(predictor->manifest(), signatures);
  google::protobuf::Any& any = (*response->mutable_metadata())["signature_def"];
  any.set_type_url(kSignatureDefMapType);
  any.set_value(signatures.SerializeAsString());
  response->mutable_model_spec()->set_name(context_.model_name);
  response->mutable_model_spec()->mutable_version()->set_value(predictor->version());
  return grpc::Status::OK;
}

}  // namespace est::serving::detail
