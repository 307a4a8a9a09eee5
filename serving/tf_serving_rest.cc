#include "serving/tf_serving_rest.h"

#include <ATen/ATen.h>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <set>

#include "common/json_from_outside.h"
#include "estimator/export/export_manifest.h"
#include "serving/call_status.h"
#include "serving/example_json.h"
#include "serving/json_tensor.h"
#include "serving/predictor.h"
#include "serving/proto/tf_serving.pb.h"
#include "serving/rest_response.h"
#include "serving/tf_serving_codec.h"
#include "serving/wire_tensor.h"

namespace est::serving::detail {
namespace {

/// The model spec of a path after "/v1/models/": NAME[/versions/V|/labels/L], then "" or
/// "/metadata" (`what`), or ":verb" (`verb`). False for another form.
bool ParseModelPath(const std::string& rest, tf::ModelSpec& spec, std::string& what, std::string& verb) {
  std::string path = rest;
  const size_t colon = path.rfind(':');
  if (colon != std::string::npos) {
    verb = path.substr(colon + 1);
    path.resize(colon);
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts[0].empty()) return false;
  spec.set_name(parts[0]);
  size_t next = 1;
  if (parts.size() >= 3 && (parts[1] == "versions" || parts[1] == "labels") && !parts[2].empty()) {
    if (parts[1] == "labels") {
      spec.set_version_label(parts[2]);
    } else {
      const std::string& version = parts[2];
      if (version.empty() || version.size() > 18 ||
          !std::all_of(version.begin(), version.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
        return false;
      spec.mutable_version()->set_value(std::stoll(version));
    }
    next = 3;
  }
  if (parts.size() == next + 1 && parts[next] == "metadata" && verb.empty()) {
    what = "metadata";
    return true;
  }
  return parts.size() == next;
}

/// The tensor of input `name` (of `dtype`; kByte marks the records input's strings) from its
/// JSON value, as a TensorProto.
void InputProto(const std::string& name, const nlohmann::json& value, const TensorSpec* spec, bool records,
                int64_t max_bytes, tf::TensorProto& proto) {
  const std::vector<int64_t> shape = JsonShape(name, value);
  const std::vector<const nlohmann::json*> elements = JsonElements(value);
  if (records) {
    proto.set_dtype(tf::DT_STRING);
    for (int64_t size : shape) proto.mutable_tensor_shape()->add_dim()->set_size(size);
    for (std::string& record : StringsOfJsonElements(name, elements, max_bytes)) proto.add_string_val(std::move(record));
    return;
  }
  const at::ScalarType dtype = spec->dtype;
  TensorToProto(TensorFromBytes(name, dtype, shape, BytesOfJsonElements(name, dtype, elements, max_bytes), max_bytes),
                proto);
}

/// The inputs of a :predict body (row or columnar format) as PredictRequest inputs; `row` tells
/// which format it is.
void DecodePredictBody(const nlohmann::json& body, const ExportManifest& manifest, int64_t max_bytes,
                       tf::PredictRequest& request, bool& row) {
  EST_CHECK(body.is_object(), RequestError, "the request is a JSON ", body.type_name(), "; expected an object");
  if (body.contains("signature_name")) {
    EST_CHECK(body.at("signature_name").is_string(), RequestError, "\"signature_name\" is not a string");
    request.mutable_model_spec()->set_signature_name(body.at("signature_name").get<std::string>());
  }
  const bool has_instances = body.contains("instances"), has_inputs = body.contains("inputs");
  EST_CHECK(has_instances != has_inputs, RequestError,
            "the request must have either \"instances\" (row format) or \"inputs\" (columnar format), not ",
            has_instances ? "both" : "neither");
  row = has_instances;
  // The model's input names and their specs; a model of records takes one string input.
  std::vector<std::string> names;
  if (!manifest.records_input.empty()) {
    names.push_back(manifest.records_input);
  } else {
    for (const TensorSpec& input : manifest.inputs) names.push_back(input.name);
  }
  auto spec_of = [&](const std::string& name) -> const TensorSpec* {
    for (const TensorSpec& input : manifest.inputs)
      if (input.name == name) return &input;
    return nullptr;
  };
  auto add = [&](const std::string& name, const nlohmann::json& value) {
    const bool records = name == manifest.records_input && !manifest.records_input.empty();
    const TensorSpec* spec = spec_of(name);
    EST_CHECK(records || spec != nullptr, RequestError, "input '", name, "' is not one of the model's inputs: ",
              manifest.records_input.empty() ? QuotedNames(manifest.inputs) : "'" + manifest.records_input + "'");
    InputProto(name, value, spec, records, max_bytes, (*request.mutable_inputs())[name]);
  };
  const nlohmann::json& data = row ? body.at("instances") : body.at("inputs");
  const bool named = row ? (data.is_array() && !data.empty() && data.front().is_object() &&
                            !data.front().contains("b64"))
                         : (data.is_object() && !data.contains("b64"));
  if (!named) {
    EST_CHECK(names.size() == 1, RequestError, "the request gives one unnamed input, but the model takes ",
              names.size(), " (", QuotedNames(manifest.inputs), "): name each");
    EST_CHECK(!row || data.is_array(), RequestError, "\"instances\" is not an array");
    add(names[0], data);
    return;
  }
  if (!row) {
    for (const auto& [name, value] : data.items()) add(name, value);
    return;
  }
  // Row format with named inputs: each instance an object of every input; each input's values
  // stacked along a new dimension 0.
  std::map<std::string, nlohmann::json> columns;
  const std::set<std::string> keys = [&] {
    std::set<std::string> first;
    for (const auto& item : data.front().items()) first.insert(item.key());
    return first;
  }();
  for (size_t i = 0; i < data.size(); ++i) {
    const nlohmann::json& instance = data[i];
    EST_CHECK(instance.is_object(), RequestError, "instance ", i, " is not an object, as instance 0 is");
    std::set<std::string> these;
    for (const auto& [name, value] : instance.items()) {
      these.insert(name);
      columns[name].push_back(value);
    }
    EST_CHECK(these == keys, RequestError, "instance ", i, " names other inputs than instance 0");
  }
  for (const auto& [name, column] : columns) add(name, column);
}

/// The predictions as TensorFlow Serving writes them: row format, a list of one entry per
/// example (the output's row, or an object of every output's); columnar, each output whole.
nlohmann::json EncodePredictions(const tf::PredictResponse& response, bool row) {
  std::map<std::string, at::Tensor> outputs;
  for (const auto& [name, proto] : response.outputs())
    outputs.emplace(name, TensorFromProto(name, proto, std::numeric_limits<int64_t>::max()));
  if (!row) {
    if (outputs.size() == 1) return {{"outputs", JsonOfTensor(outputs.begin()->second, true)}};
    nlohmann::json columns = nlohmann::json::object();
    for (const auto& [name, tensor] : outputs) columns[name] = JsonOfTensor(tensor, true);
    return {{"outputs", columns}};
  }
  int64_t rows = -1;
  for (const auto& [name, tensor] : outputs) {
    EST_CHECK(tensor.dim() >= 1 && (rows < 0 || tensor.size(0) == rows), ModelError, "output '", name,
              "' has no batch dimension in common with the others: the row format cannot hold it; ask in the "
              "columnar format (\"inputs\")");
    rows = tensor.size(0);
  }
  if (outputs.size() == 1) return {{"predictions", JsonOfTensor(outputs.begin()->second, true)}};
  nlohmann::json predictions = nlohmann::json::array();
  for (int64_t i = 0; i < rows; ++i) {
    nlohmann::json prediction = nlohmann::json::object();
    for (const auto& [name, tensor] : outputs) prediction[name] = JsonOfTensor(tensor[i], true);
    predictions.push_back(std::move(prediction));
  }
  return {{"predictions", predictions}};
}

}  // namespace

std::optional<net::HttpResponse> TfServingRest::handle(const net::HttpRequest& request,
                                                       std::chrono::steady_clock::time_point deadline) const {
  const std::string prefix = "/v1/models/";
  if (request.path.rfind("/v1/", 0) != 0) return std::nullopt;
  tf::ModelSpec spec;
  std::string what, verb;
  if (request.path.rfind(prefix, 0) != 0 || !ParseModelPath(request.path.substr(prefix.size()), spec, what, verb))
    return JsonError(404, "Malformed request: " + request.method + " " + request.path +
                          "; TensorFlow Serving's paths are /v1/models/NAME[/versions/V|/labels/L][/metadata|:predict|:classify|:regress]");
  if (!verb.empty()) {
    if (request.method != "POST") return JsonError(405, "use POST for :" + verb);
    if (verb == "predict") return predict(request, spec, deadline);
    if (verb == "classify" || verb == "regress") return examples(request, spec, verb == "classify", deadline);
    return JsonError(404, "Malformed request: unknown method ':" + verb + "'; expected :predict, :classify or :regress");
  }
  if (request.method != "GET" && request.method != "HEAD") return JsonError(405, "use GET for " + request.path);
  Servable servable;
  if (grpc::Status found = service_.find(spec, servable); !found.ok()) return JsonErrorOf(found);
  const std::string version = std::to_string(servable.predictor->version());
  if (what == "metadata") {
    tf::SignatureDefMap signatures;
    SignatureDefMapOf(servable.predictor->manifest(), signatures);
    std::string signature_json;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(signatures, &signature_json, options);
    nlohmann::json body = {
        {"model_spec", {{"name", servable.name}, {"signature_name", ""}, {"version", version}}},
        {"metadata", {{"signature_def", nlohmann::json::parse(signature_json)}}}};
    return JsonResponse(200, body);
  }
  tf::GetModelStatusResponse status;
  if (grpc::Status found = service_.model_status(spec, status); !found.ok()) return JsonErrorOf(found);
  nlohmann::json versions = nlohmann::json::array();
  for (const tf::ModelVersionStatus& served : status.model_version_status())
    versions.push_back({{"version", std::to_string(served.version())},
                        {"state", tf::ModelVersionStatus::State_Name(served.state())},
                        {"status", {{"error_code", served.status().error_code() == 0 ? "OK" : "UNKNOWN"},
                                    {"error_message", served.status().error_message()}}}});
  return JsonResponse(200, {{"model_version_status", versions}});
}

net::HttpResponse TfServingRest::examples(const net::HttpRequest& http, tf::ModelSpec spec, bool classify,
                                          std::chrono::steady_clock::time_point deadline) const {
  tf::Input input;
  try {
    input = DecodeExamplesJson(http.body, service_.max_request_bytes(), spec);
  } catch (const RequestError& bad) {
    return JsonError(400, bad.what());
  }
  if (classify) {
    tf::ClassificationRequest request;
    *request.mutable_model_spec() = std::move(spec);
    *request.mutable_input() = std::move(input);
    tf::ClassificationResponse response;
    if (grpc::Status done = service_.classify(request, response, deadline); !done.ok()) return JsonErrorOf(done);
    return JsonResponse(200, ClassificationJson(response.result()));
  }
  tf::RegressionRequest request;
  *request.mutable_model_spec() = std::move(spec);
  *request.mutable_input() = std::move(input);
  tf::RegressionResponse response;
  if (grpc::Status done = service_.regress(request, response, deadline); !done.ok()) return JsonErrorOf(done);
  return JsonResponse(200, RegressionJson(response.result()));
}

net::HttpResponse TfServingRest::predict(const net::HttpRequest& http, const tf::ModelSpec& spec,
                                         std::chrono::steady_clock::time_point deadline) const {
  Servable servable;
  if (grpc::Status found = service_.find(spec, servable); !found.ok()) return JsonErrorOf(found);
  tf::PredictRequest request;
  *request.mutable_model_spec() = spec;
  bool row = true;
  try {
    row = DecodePredictJson(http.body, servable.predictor->manifest(), service_.max_request_bytes(), request);
  } catch (const RequestError& bad) {
    return JsonError(400, bad.what());
  }
  tf::PredictResponse response;
  if (grpc::Status predicted = service_.predict(request, response, deadline); !predicted.ok()) return JsonErrorOf(predicted);
  try {
    return JsonResponse(200, EncodePredictions(response, row));
  } catch (const ModelError& unfit) {
    return JsonError(400, unfit.what());
  }
}

}  // namespace est::serving::detail

namespace est::serving {

bool DecodePredictJson(const std::string& body, const ExportManifest& manifest, int64_t max_bytes,
                       tf::PredictRequest& request) {
  const ParsedJson parsed = ParseJsonFromOutside(body);
  EST_CHECK(parsed.ok(), RequestError, "JSON Parse error: ", parsed.error);
  bool row = true;
  detail::DecodePredictBody(parsed.value, manifest, max_bytes, request, row);
  return row;
}

}  // namespace est::serving
