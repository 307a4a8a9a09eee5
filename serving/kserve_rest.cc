#include "serving/kserve_rest.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <limits>

#include "common/json_from_outside.h"
#include "serving/call_status.h"
#include "serving/json_tensor.h"
#include "serving/kserve_codec.h"
#include "serving/predictor.h"
#include "serving/proto/kserve_v2.pb.h"
#include "serving/rest_response.h"
#include "serving/wire_tensor.h"

namespace est::serving::detail {
namespace {

/// The path's parts after "/v2/models/": the name, the version ("" for none) and what follows
/// ("", "ready" or "infer"); false for another form.
bool ParseModelPath(const std::string& rest, std::string& name, std::string& version, std::string& action) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t slash = rest.find('/', start);
    parts.push_back(rest.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.empty() || parts[0].empty()) return false;
  name = parts[0];
  size_t next = 1;
  if (parts.size() >= 3 && parts[1] == "versions" && !parts[2].empty()) {
    version = parts[2];
    next = 3;
  }
  if (parts.size() == next) return true;
  if (parts.size() == next + 1 && (parts[next] == "ready" || parts[next] == "infer")) {
    action = parts[next];
    return true;
  }
  return false;
}

/// The value of the boolean parameter `name` of a JSON object's "parameters", or `otherwise`.
bool BoolParameter(const nlohmann::json& object, const char* name, bool otherwise) {
  if (!object.contains("parameters") || !object.at("parameters").is_object()) return otherwise;
  const nlohmann::json& parameters = object.at("parameters");
  if (!parameters.contains(name)) return otherwise;
  EST_CHECK(parameters.at(name).is_boolean(), RequestError, "parameter '", name, "' is a ",
            parameters.at(name).type_name(), "; expected true or false");
  return parameters.at(name).get<bool>();
}

/// The request's JSON inputs and binary parts as a ModelInferRequest, every input's bytes in
/// raw_input_contents; the outputs it asks for and which of them come back binary.
void DecodeRequest(const nlohmann::json& json, const std::string& binary, int64_t max_bytes,
                   v2::ModelInferRequest& request, std::map<std::string, bool>& binary_outputs, bool& all_binary) {
  EST_CHECK(json.is_object(), RequestError, "the request is a JSON ", json.type_name(), "; expected an object");
  if (json.contains("id")) {
    EST_CHECK(json.at("id").is_string(), RequestError, "\"id\" is a ", json.at("id").type_name(), "; expected a string");
    request.set_id(json.at("id").get<std::string>());
  }
  all_binary = BoolParameter(json, "binary_data_output", false);
  EST_CHECK(json.contains("inputs") && json.at("inputs").is_array(), RequestError,
            "the request has no \"inputs\" array");
  size_t binary_offset = 0;
  for (const nlohmann::json& input : json.at("inputs")) {
    EST_CHECK(input.is_object() && input.contains("name") && input.at("name").is_string(), RequestError,
              "an input is not an object with a \"name\"");
    const std::string name = input.at("name").get<std::string>();
    EST_CHECK(input.contains("datatype") && input.at("datatype").is_string(), RequestError, "input '", name,
              "' has no \"datatype\"");
    EST_CHECK(input.contains("shape") && input.at("shape").is_array(), RequestError, "input '", name,
              "' has no \"shape\" array");
    auto& tensor = *request.add_inputs();
    tensor.set_name(name);
    tensor.set_datatype(input.at("datatype").get<std::string>());
    for (const nlohmann::json& size : input.at("shape")) {
      EST_CHECK(size.is_number_integer(), RequestError, "input '", name, "' has ", size.dump(),
                " in its shape; expected whole numbers");
      tensor.add_shape(size.get<int64_t>());
    }
    std::string& raw = *request.add_raw_input_contents();
    const nlohmann::json* parameters = input.contains("parameters") ? &input.at("parameters") : nullptr;
    if (parameters != nullptr && parameters->is_object() && parameters->contains("binary_data_size")) {
      const nlohmann::json& size = parameters->at("binary_data_size");
      EST_CHECK(size.is_number_unsigned(), RequestError, "input '", name,
                "' has a binary_data_size that is not a whole number");
      const uint64_t bytes = size.get<uint64_t>();
      EST_CHECK(bytes <= binary.size() - binary_offset, RequestError, "input '", name, "' has binary_data_size ", bytes,
                " but the body has ", binary.size() - binary_offset, " binary bytes left");
      raw = binary.substr(binary_offset, bytes);
      binary_offset += bytes;
      continue;
    }
    EST_CHECK(input.contains("data"), RequestError, "input '", name, "' has neither \"data\" nor binary_data_size");
    const std::vector<const nlohmann::json*> elements = JsonElements(input.at("data"));
    const std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
    if (tensor.datatype() == kV2BytesDatatype) {
      const int64_t count = CheckedElementCount(name, shape, 1, max_bytes);
      EST_CHECK(static_cast<int64_t>(elements.size()) == count, RequestError, "input '", name, "' has ",
                elements.size(), " elements; its shape holds ", count);
      for (const std::string& value : StringsOfJsonElements(name, elements, max_bytes)) {
        const uint32_t length = static_cast<uint32_t>(value.size());
        raw.append(reinterpret_cast<const char*>(&length), 4);
        raw.append(value);
      }
      continue;
    }
    const std::optional<at::ScalarType> dtype = DtypeOfV2Datatype(tensor.datatype());
    EST_CHECK(dtype.has_value(), RequestError, "input '", name, "' has datatype '", tensor.datatype(),
              "', which est-serve does not take");
    const int64_t count = CheckedElementCount(name, shape, static_cast<int64_t>(c10::elementSize(*dtype)), max_bytes);
    EST_CHECK(static_cast<int64_t>(elements.size()) == count, RequestError, "input '", name, "' has ", elements.size(),
              " elements in \"data\"; its shape ", at::IntArrayRef(shape), " holds ", count);
    raw = BytesOfJsonElements(name, *dtype, elements, max_bytes);
  }
  EST_CHECK(binary_offset == binary.size(), RequestError, "the body has ", binary.size() - binary_offset,
            " binary bytes that no input's binary_data_size claims");
  if (json.contains("outputs")) {
    EST_CHECK(json.at("outputs").is_array(), RequestError, "\"outputs\" is not an array");
    for (const nlohmann::json& output : json.at("outputs")) {
      EST_CHECK(output.is_object() && output.contains("name") && output.at("name").is_string(), RequestError,
                "an output is not an object with a \"name\"");
      const std::string name = output.at("name").get<std::string>();
      request.add_outputs()->set_name(name);
      binary_outputs[name] = BoolParameter(output, "binary_data", all_binary);
    }
  }
}

/// The response's outputs as KServe's JSON, each output's data inline or, where asked, in the
/// binary part after the JSON.
net::HttpResponse EncodeResponse(const v2::ModelInferResponse& response, const std::map<std::string, bool>& binary_outputs,
                                 bool all_binary) {
  nlohmann::json json = {{"model_name", response.model_name()}, {"model_version", response.model_version()}};
  if (!response.id().empty()) json["id"] = response.id();
  nlohmann::json outputs = nlohmann::json::array();
  std::string binary;
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& output = response.outputs(i);
    const std::string& bytes = response.raw_output_contents(i);
    const std::vector<int64_t> shape(output.shape().begin(), output.shape().end());
    nlohmann::json entry = {{"name", output.name()}, {"datatype", output.datatype()}, {"shape", shape}};
    auto asked = binary_outputs.find(output.name());
    if (asked != binary_outputs.end() ? asked->second : all_binary) {
      entry["parameters"] = {{"binary_data_size", bytes.size()}};
      binary += bytes;
    } else {
      const at::ScalarType dtype = *DtypeOfV2Datatype(output.datatype());
      entry["data"] = JsonOfTensor(TensorFromBytes(output.name(), dtype, shape, bytes,
                                                   std::numeric_limits<int64_t>::max()), /*nested=*/false);
    }
    outputs.push_back(std::move(entry));
  }
  json["outputs"] = std::move(outputs);
  net::HttpResponse http;
  http.body = json.dump();
  if (!binary.empty()) {
    http.headers.emplace_back("Inference-Header-Content-Length", std::to_string(http.body.size()));
    http.content_type = "application/octet-stream";
    http.body += binary;
  }
  return http;
}

}  // namespace

std::optional<net::HttpResponse> KServeRest::handle(const net::HttpRequest& request,
                                                    std::chrono::steady_clock::time_point deadline) const {
  const std::string& path = request.path;
  if (path != "/v2" && path.rfind("/v2/", 0) != 0) return std::nullopt;
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (path == "/v2/health/live") {
    if (!get) return JsonError(405, "use GET for " + path);
    return JsonResponse(200, {{"live", true}});
  }
  if (path == "/v2/health/ready") {
    if (!get) return JsonError(405, "use GET for " + path);
    const bool ready = service_.server_ready();
    return JsonResponse(ready ? 200 : 503, {{"ready", ready}});
  }
  if (path == "/v2") {
    if (!get) return JsonError(405, "use GET for " + path);
    return JsonResponse(200, {{"name", kServerName}, {"version", kServerVersion}, {"extensions", {"binary_tensor_data"}}});
  }
  const std::string prefix = "/v2/models/";
  std::string name, version, action;
  if (path.rfind(prefix, 0) != 0 || !ParseModelPath(path.substr(prefix.size()), name, version, action))
    return JsonError(404, "no route " + path + "; KServe v2's are /v2/health/live, /v2/health/ready, /v2, "
                      "/v2/models/NAME[/versions/V][/ready|/infer]");
  if (action == "infer") {
    if (request.method != "POST") return JsonError(405, "use POST for " + path);
    return infer(request, name, version, deadline);
  }
  if (!get) return JsonError(405, "use GET for " + path);
  if (action == "ready") {
    const bool ready = service_.model_ready(name, version);
    return JsonResponse(ready ? 200 : 400, {{"name", name}, {"ready", ready}});
  }
  v2::ModelMetadataRequest metadata_request;
  metadata_request.set_name(name);
  metadata_request.set_version(version);
  v2::ModelMetadataResponse metadata;
  if (grpc::Status found = service_.model_metadata(metadata_request, metadata); !found.ok()) return JsonErrorOf(found);
  auto tensors = [](const auto& list) {
    nlohmann::json json = nlohmann::json::array();
    for (const auto& tensor : list)
      json.push_back({{"name", tensor.name()},
                      {"datatype", tensor.datatype()},
                      {"shape", std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())}});
    return json;
  };
  return JsonResponse(200, {{"name", metadata.name()},
                    {"versions", std::vector<std::string>(metadata.versions().begin(), metadata.versions().end())},
                    {"platform", metadata.platform()},
                    {"inputs", tensors(metadata.inputs())},
                    {"outputs", tensors(metadata.outputs())}});
}

net::HttpResponse KServeRest::infer(const net::HttpRequest& http, const std::string& name, const std::string& version,
                                    std::chrono::steady_clock::time_point deadline) const {
  KServeJsonRequest decoded;
  try {
    decoded = DecodeKServeJsonRequest(http.body, http.header(kInferenceHeaderLength), service_.max_request_bytes());
  } catch (const RequestError& bad) {
    return JsonError(400, bad.what());
  }
  decoded.request.set_model_name(name);
  decoded.request.set_model_version(version);
  v2::ModelInferResponse response;
  if (grpc::Status inferred = service_.infer(decoded.request, response, deadline); !inferred.ok())
    return JsonErrorOf(inferred);
  return EncodeResponse(response, decoded.binary_outputs, decoded.all_binary);
}

}  // namespace est::serving::detail

namespace est::serving {

KServeJsonRequest DecodeKServeJsonRequest(const std::string& body, const std::string& json_length, int64_t max_bytes) {
  size_t json_bytes = body.size();
  if (!json_length.empty()) {
    const bool digits = json_length.size() <= 18 && std::all_of(json_length.begin(), json_length.end(),
                                                                [](unsigned char c) { return std::isdigit(c) != 0; });
    EST_CHECK(digits && std::stoull(json_length) <= body.size(), RequestError, "Inference-Header-Content-Length is '",
              json_length, "'; expected the length of the body's JSON part, at most the body's ", body.size(), " bytes");
    json_bytes = std::stoull(json_length);
  }
  const ParsedJson parsed = ParseJsonFromOutside(std::string_view(body).substr(0, json_bytes));
  EST_CHECK(parsed.ok(), RequestError, "the request is not JSON: ", parsed.error);
  KServeJsonRequest decoded;
  detail::DecodeRequest(parsed.value, body.substr(json_bytes), max_bytes, decoded.request, decoded.binary_outputs,
                decoded.all_binary);
  return decoded;
}

}  // namespace est::serving
