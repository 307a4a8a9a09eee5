#include "serving/prediction_service.h"

#include <set>

#include "estimator/export/example_api_outputs.h"
#include "serving/call_status.h"
#include "serving/example_input.h"
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

/// "labels 'stable' (1), 'canary' (2)", or "no version labels".
std::string LabelsListed(const VersionLabels& labels) {
  std::string listed;
  for (const auto& [label, version] : labels)
    listed += (listed.empty() ? "labels '" : ", '") + label + "' (" + std::to_string(version) + ")";
  return listed.empty() ? "no version labels" : listed;
}

}  // namespace

grpc::Status PredictionService::find(const tf::ModelSpec& spec, Servable& servable) const {
  servable.model = context_.models->find(spec.name());
  if (servable.model == nullptr)
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "Servable not found for request: Latest(" + spec.name() +
                                                         "); this server serves " + ServedNames(*context_.models));
  servable.name = spec.name();
  if (spec.version_choice_case() == tf::ModelSpec::kVersionLabel) {
    const std::optional<int64_t> labeled = servable.model->labeled(spec.version_label());
    if (!labeled)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "Unrecognized servable version label: " + spec.version_label() + " (model '" + spec.name() +
                              "' has " + LabelsListed(servable.model->version_labels()) + ")");
    servable.predictor = servable.model->find(*labeled);
    servable.pinned = true;
    if (servable.predictor == nullptr)
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "Servable not found for request: Specific(" + spec.name() + ", " + std::to_string(*labeled) +
                              ") (label '" + spec.version_label() + "'); versions served: " +
                              ServedVersions(*servable.model));
  } else if (spec.has_version()) {
    servable.predictor = servable.model->find(spec.version().value());
    servable.pinned = true;
    if (servable.predictor == nullptr)
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "Servable not found for request: Specific(" + spec.name() + ", " +
                              std::to_string(spec.version().value()) + "); versions served: " +
                              ServedVersions(*servable.model));
  } else {
    servable.predictor = servable.model->current();
  }
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
  Servable servable;
  if (grpc::Status found = find(request.model_spec(), servable); !found.ok()) return found;
  try {
    const std::vector<std::string> outputs = FilteredOutputs(request, servable.predictor->manifest().outputs);
    int64_t version = 0;  // the version that answered: a reload may have swapped it in since find()
    const TensorMap predictions = servable.predict(
        RequestTensors(DecodePredictInputs(request, context_.max_request_bytes), *servable.predictor), deadline,
        &version);
    for (const std::string& name : outputs) TensorToProto(predictions.at(name), (*response.mutable_outputs())[name]);
    tf::ModelSpec& spec = *response.mutable_model_spec();
    spec.set_name(servable.name);
    spec.mutable_version()->set_value(version);
    spec.set_signature_name(kDefaultSignature);
    return grpc::Status::OK;
  } catch (...) {
    return StatusOfError(std::current_exception());
  }
}

grpc::Status PredictionService::Classify(grpc::ServerContext* context, const tf::ClassificationRequest* request,
                                         tf::ClassificationResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status = CheckRequestSize(request->ByteSizeLong(), context_.max_request_bytes);
  if (status.ok()) status = classify(*request, *response, CallDeadline(*context));
  RecordCall(context_, "tf_serving_grpc", status, start);
  return status;
}

grpc::Status PredictionService::Regress(grpc::ServerContext* context, const tf::RegressionRequest* request,
                                        tf::RegressionResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status = CheckRequestSize(request->ByteSizeLong(), context_.max_request_bytes);
  if (status.ok()) status = regress(*request, *response, CallDeadline(*context));
  RecordCall(context_, "tf_serving_grpc", status, start);
  return status;
}

grpc::Status PredictionService::examples_output(const tf::ModelSpec& spec, const tf::Input& input, bool classify,
                                                std::chrono::steady_clock::time_point deadline, at::Tensor& values,
                                                tf::ModelSpec& answered, std::vector<std::string>* class_labels) const {
  Servable servable;
  if (grpc::Status found = find(spec, servable); !found.ok()) return found;
  const ExportManifest& manifest = servable.predictor->manifest();
  const std::string output = classify ? ClassifyOutput(manifest) : RegressOutput(manifest);
  if (output.empty())
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        classify ? "Expected a classification output 'scores' or 'probabilities' (floats, a row of "
                                   "class scores per example); model '" + servable.name + "' has " +
                                       QuotedNames(manifest.outputs) + ": use Predict"
                                 : "Expected a regression output 'outputs', 'predictions' or one float output of a "
                                   "value per example; model '" + servable.name + "' has " +
                                       QuotedNames(manifest.outputs) + ": use Predict");
  try {
    int64_t version = 0;
    const TensorMap predictions =
        servable.predict(ExampleTensors(SerializedExamples(input), *servable.predictor), deadline, &version);
    values = predictions.at(output).to(at::kFloat).contiguous();
    if (class_labels != nullptr) *class_labels = manifest.class_labels;
    answered.set_name(servable.name);
    answered.mutable_version()->set_value(version);
    answered.set_signature_name(kDefaultSignature);
    return grpc::Status::OK;
  } catch (...) {
    return StatusOfError(std::current_exception());
  }
}

grpc::Status PredictionService::classify(const tf::ClassificationRequest& request, tf::ClassificationResponse& response,
                                         std::chrono::steady_clock::time_point deadline) const {
  if (!request.has_model_spec()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  at::Tensor scores;
  std::vector<std::string> class_labels;
  if (grpc::Status status = examples_output(request.model_spec(), request.input(), true, deadline, scores,
                                            *response.mutable_model_spec(), &class_labels);
      !status.ok())
    return status;
  scores = scores.reshape({scores.size(0), -1});
  if (class_labels.size() != static_cast<size_t>(scores.size(1))) class_labels.clear();
  const float* values = scores.data_ptr<float>();
  for (int64_t row = 0; row < scores.size(0); ++row) {
    tf::Classifications& classes = *response.mutable_result()->add_classifications();
    for (int64_t column = 0; column < scores.size(1); ++column) {
      tf::Class& label = *classes.add_classes();
      // The export's names of the classes (a label vocabulary), else the class index, as TensorFlow's
      // canned classifiers label classes.
      label.set_label(class_labels.empty() ? std::to_string(column) : class_labels[static_cast<size_t>(column)]);
      label.set_score(values[row * scores.size(1) + column]);
    }
  }
  return grpc::Status::OK;
}

grpc::Status PredictionService::regress(const tf::RegressionRequest& request, tf::RegressionResponse& response,
                                        std::chrono::steady_clock::time_point deadline) const {
  if (!request.has_model_spec()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  at::Tensor outputs;
  if (grpc::Status status = examples_output(request.model_spec(), request.input(), false, deadline, outputs,
                                            *response.mutable_model_spec());
      !status.ok())
    return status;
  outputs = outputs.reshape({-1});
  const float* values = outputs.data_ptr<float>();
  for (int64_t row = 0; row < outputs.size(0); ++row)
    response.mutable_result()->add_regressions()->set_value(values[row]);
  return grpc::Status::OK;
}

grpc::Status PredictionService::model_status(const tf::ModelSpec& spec, tf::GetModelStatusResponse& response) const {
  Servable servable;
  // The status of a model asks for no signature: only the name and version are checked.
  tf::ModelSpec named = spec;
  named.clear_signature_name();
  if (grpc::Status found = find(named, servable); !found.ok()) return found;
  std::vector<int64_t> versions;
  if (servable.pinned) {
    versions.push_back(servable.predictor->version());
  } else {
    for (const auto& [version, predictor] : servable.model->versions()) versions.push_back(version);
  }
  for (int64_t version : versions) {
    tf::ModelVersionStatus& status = *response.add_model_version_status();
    status.set_version(version);
    status.set_state(tf::ModelVersionStatus::AVAILABLE);
    status.mutable_status()->set_error_code(0);  // OK
  }
  return grpc::Status::OK;
}

grpc::Status PredictionService::GetModelMetadata(grpc::ServerContext* context,
                                                 const tf::GetModelMetadataRequest* request,
                                                 tf::GetModelMetadataResponse* response) {
  if (grpc::Status admitted = net::CheckBearerToken(*context, context_.token, kTokenSource); !admitted.ok()) return admitted;
  if (!request->has_model_spec()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  Servable servable;
  if (grpc::Status found = find(request->model_spec(), servable); !found.ok()) return found;
  if (request->metadata_field().empty())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "GetModelMetadataRequest must specify at least one metadata_field: 'signature_def'");
  for (const std::string& field : request->metadata_field())
    if (field != "signature_def")
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "Metadata field " + field + " is not supported; expected 'signature_def'");
  tf::SignatureDefMap signatures;
  SignatureDefMapOf(servable.predictor->manifest(), signatures);
  google::protobuf::Any& any = (*response->mutable_metadata())["signature_def"];
  any.set_type_url(kSignatureDefMapType);
  any.set_value(signatures.SerializeAsString());
  response->mutable_model_spec()->set_name(servable.name);
  response->mutable_model_spec()->mutable_version()->set_value(servable.predictor->version());
  return grpc::Status::OK;
}

}  // namespace est::serving::detail
