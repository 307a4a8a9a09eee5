// est-serve's REST API: the JSON tensor codec and both APIs' body decoders refuse what is wrong
// naming it (RequestError) and decode what is right exactly; a ModelServer with a REST port
// answers KServe v2 and TensorFlow Serving's routes as the Predictor does, refuses oversized
// bodies (413) and unknown routes (404) with a JSON error, asks for its token (401) except of the
// health probes, and counts its calls on /metrics. The real clients' checks are
// real_clients_test.py's.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>

#include "data/example/example.pb.h"
#include "estimator/export/export_manifest.h"
#include "serving/example_json.h"
#include "serving/json_tensor.h"
#include "serving/kserve_rest.h"
#include "serving/model_server.h"
#include "serving/predictor.h"
#include "serving/tf_serving_codec.h"
#include "serving/tf_serving_rest.h"
#include "tests/apps/run_command.h"
#include "tests/http_exchange.h"
#include "tests/serving/serving_models.h"

namespace rest_api_test {
using namespace est;
using namespace est::serving;
using nlohmann::json;

namespace {

/// The message of the RequestError `body` throws ("" when it throws none).
std::string Refusal(const std::function<void()>& body) { return testing::ErrorMessageOf<RequestError>(body); }

ExportManifest TwoInputs() {
  ExportManifest manifest;
  manifest.inputs = {{"x", at::kFloat, {-1, 3}}, {"ids", at::kLong, {-1, 2}}};
  return manifest;
}

}  // namespace

TEST_CASE("JSON tensors: shapes, elements and values are read exactly and refused naming the input",
          "[serving][rest]") {
  const json nested = json::parse("[[1, 2.5, -3], [4, 5, 6]]");
  CHECK(JsonShape("x", nested) == std::vector<int64_t>{2, 3});
  CHECK(JsonShape("x", json(7)).empty());
  CHECK(JsonElements(nested).size() == 6);
  const std::string bytes = BytesOfJsonElements("x", at::kFloat, JsonElements(nested), 1 << 20);
  REQUIRE(bytes.size() == 24);
  float values[6];
  std::memcpy(values, bytes.data(), 24);
  CHECK(values[1] == 2.5f);
  CHECK(values[2] == -3.f);
  CHECK(testing::Contains(Refusal([] { JsonShape("x", json::parse("[[1, 2], [3]]")); }), "input 'x' is ragged"));
  CHECK(testing::Contains(Refusal([] { JsonShape("x", json::parse("[[1, 2], 3]")); }), "ragged"));
  CHECK(testing::Contains(Refusal([] { BytesOfJsonElements("x", at::kChar, JsonElements(json::parse("[1, 128]")), 64); }),
                          "128, out of range"));
  CHECK(testing::Contains(Refusal([] { BytesOfJsonElements("x", at::kLong, JsonElements(json::parse("[1.5]")), 64); }),
                          "not a whole number"));
  CHECK(testing::Contains(Refusal([] { BytesOfJsonElements("b", at::kBool, JsonElements(json::parse("[2]")), 64); }),
                          "expected true or false"));
  CHECK(testing::Contains(Refusal([] { BytesOfJsonElements("x", at::kFloat, JsonElements(json::parse("[\"a\"]")), 64); }),
                          "a string at element 0"));
  CHECK(testing::Contains(Refusal([] { BytesOfJsonElements("x", at::kFloat, JsonElements(json::parse("[1, 2, 3]")), 8); }),
                          "more than 8 bytes"));
  // Non-finite floats as TensorFlow Serving and KServe write them, and back.
  const std::string special = BytesOfJsonElements("x", at::kFloat, JsonElements(json::parse("[\"NaN\", \"-Infinity\"]")), 64);
  float nan_and_inf[2];
  std::memcpy(nan_and_inf, special.data(), 8);
  CHECK(std::isnan(nan_and_inf[0]));
  CHECK(nan_and_inf[1] == -std::numeric_limits<float>::infinity());
  CHECK(JsonOfTensor(torch::tensor({std::nanf(""), 1.5f}), false) == json::parse("[\"NaN\", 1.5]"));
  CHECK(JsonOfTensor(torch::tensor({{true, false}}), true) == json::parse("[[true, false]]"));
  CHECK(JsonOfTensor(torch::arange(6).reshape({2, 3}), false) == json::parse("[0, 1, 2, 3, 4, 5]"));
  // Byte strings: plain, and {"b64": ...} (RFC 4648).
  const auto strings = StringsOfJsonElements("s", JsonElements(json::parse(R"(["ab", {"b64": "AAEC/w=="}])")), 64);
  CHECK(strings == std::vector<std::string>{"ab", std::string("\x00\x01\x02\xff", 4)});
  CHECK(Base64(std::string("\x00\x01\x02\xff", 4)) == "AAEC/w==");
  CHECK(testing::Contains(Refusal([] { StringsOfJsonElements("s", JsonElements(json::parse(R"([{"b64": "abc"}])")), 64); }),
                          "not padded base64"));
}

TEST_CASE("a KServe v2 infer body becomes the ModelInferRequest it describes, or a RequestError naming why",
          "[serving][rest]") {
  using serving::DecodeKServeJsonRequest;
  const auto decoded = DecodeKServeJsonRequest(
      R"({"id": "7", "inputs": [{"name": "x", "shape": [1, 2], "datatype": "INT16", "data": [[-3, 4]]}],)"
      R"( "outputs": [{"name": "y", "parameters": {"binary_data": true}}, {"name": "z"}]})",
      "", 1 << 20);
  CHECK(decoded.request.id() == "7");
  REQUIRE(decoded.request.raw_input_contents_size() == 1);
  CHECK(decoded.request.raw_input_contents(0) == std::string("\xfd\xff\x04\x00", 4));
  CHECK(decoded.binary_outputs == std::map<std::string, bool>{{"y", true}, {"z", false}});
  // The binary tensor data extension: JSON first, its length in the header, then the bytes.
  const std::string head = R"({"inputs": [{"name": "x", "shape": [2], "datatype": "UINT8",)"
                           R"( "parameters": {"binary_data_size": 2}}], "parameters": {"binary_data_output": true}})";
  const auto binary = DecodeKServeJsonRequest(head + "\x01\x02", std::to_string(head.size()), 1 << 20);
  CHECK(binary.request.raw_input_contents(0) == "\x01\x02");
  CHECK(binary.all_binary);
  CHECK(testing::Contains(Refusal([&] { DecodeKServeJsonRequest(head + "\x01", std::to_string(head.size()), 64); }),
                          "binary_data_size 2 but the body has 1"));
  CHECK(testing::Contains(Refusal([&] { DecodeKServeJsonRequest(head + "\x01\x02\x03", std::to_string(head.size()), 64); }),
                          "1 binary bytes that no input's binary_data_size claims"));
  CHECK(testing::Contains(Refusal([&] { DecodeKServeJsonRequest(head, "99999", 64); }), "Inference-Header-Content-Length"));
  CHECK(testing::Contains(Refusal([] { DecodeKServeJsonRequest("{\"inputs\": [", "", 64); }), "not JSON"));
  CHECK(testing::Contains(Refusal([] { DecodeKServeJsonRequest("[]", "", 64); }), "expected an object"));
  CHECK(testing::Contains(
      Refusal([] {
        DecodeKServeJsonRequest(R"({"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2]}]})", "", 64);
      }),
      "input 'x' has 2 elements"));
  CHECK(testing::Contains(
      Refusal([] {
        DecodeKServeJsonRequest(R"({"inputs": [{"name": "x", "shape": [1000000000], "datatype": "FP32", "data": []}]})",
                                "", 1 << 20);
      }),
      "too large"));
  CHECK(testing::Contains(
      Refusal([] { DecodeKServeJsonRequest(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "UINT32", "data": [1]}]})", "", 64); }),
      "datatype 'UINT32'"));
}

TEST_CASE("a TensorFlow Serving :predict body, row or columnar, becomes the PredictRequest it describes",
          "[serving][rest]") {
  using serving::DecodePredictJson;
  const ExportManifest manifest = TwoInputs();
  tf::PredictRequest row;
  CHECK(DecodePredictJson(R"({"instances": [{"x": [1, 2, 3], "ids": [4, 5]}, {"x": [6, 7, 8], "ids": [9, 10]}]})",
                          manifest, 1 << 20, row));
  const at::Tensor x = TensorFromProto("x", row.inputs().at("x"), 1 << 20);
  CHECK(torch::equal(x, torch::tensor({{1.f, 2.f, 3.f}, {6.f, 7.f, 8.f}})));
  CHECK(torch::equal(TensorFromProto("ids", row.inputs().at("ids"), 1 << 20), torch::tensor({{4L, 5L}, {9L, 10L}})));
  tf::PredictRequest columnar;
  CHECK_FALSE(DecodePredictJson(R"({"signature_name": "serving_default", "inputs": {"x": [[1, 2, 3]], "ids": [[4, 5]]}})",
                                manifest, 1 << 20, columnar));
  CHECK(columnar.model_spec().signature_name() == "serving_default");
  CHECK(torch::equal(TensorFromProto("x", columnar.inputs().at("x"), 1 << 20), torch::tensor({{1.f, 2.f, 3.f}})));
  tf::PredictRequest request;
  CHECK(testing::Contains(Refusal([&] { DecodePredictJson(R"({"instances": [[1, 2, 3]]})", manifest, 64, request); }),
                          "one unnamed input, but the model takes 2"));
  CHECK(testing::Contains(Refusal([&] { DecodePredictJson(R"({"inputs": {"z": [1]}})", manifest, 64, request); }),
                          "input 'z' is not one of the model's inputs"));
  CHECK(testing::Contains(
      Refusal([&] { DecodePredictJson(R"({"instances": [{"x": [1, 2, 3], "ids": [1, 2]}, {"x": [1, 2, 3]}]})", manifest, 64, request); }),
      "instance 1 names other inputs than instance 0"));
  CHECK(testing::Contains(Refusal([&] { DecodePredictJson(R"({"instances": [], "inputs": {}})", manifest, 64, request); }),
                          "not both"));
  CHECK(testing::Contains(Refusal([&] { DecodePredictJson("{", manifest, 64, request); }), "JSON Parse error"));
}

TEST_CASE("a :classify or :regress body becomes the tf.train.Examples it writes as JSON", "[serving][rest]") {
  tf::ModelSpec spec;
  const tf::Input input = DecodeExamplesJson(
      R"({"signature_name": "serving_default", "examples": [{"x": [1.5, 2, 3e0], "ids": [4, -5], "word": "cat",
          "image": {"b64": "AAH/"}}, {"x": 7.0}]})",
      1 << 20, spec);
  CHECK(spec.signature_name() == "serving_default");
  REQUIRE(input.example_list().examples_size() == 2);
  tfexample::Example first;
  REQUIRE(first.ParseFromString(input.example_list().examples(0)));
  const auto& features = first.features().feature();
  // A number with a fraction or exponent makes the list float; whole numbers alone, int64.
  CHECK(std::vector<float>(features.at("x").float_list().value().begin(), features.at("x").float_list().value().end()) ==
        std::vector<float>{1.5f, 2.f, 3.f});
  CHECK(std::vector<int64_t>(features.at("ids").int64_list().value().begin(),
                             features.at("ids").int64_list().value().end()) == std::vector<int64_t>{4, -5});
  CHECK(features.at("word").bytes_list().value(0) == "cat");
  CHECK(features.at("image").bytes_list().value(0) == std::string("\x00\x01\xff", 3));
  tfexample::Example second;
  REQUIRE(second.ParseFromString(input.example_list().examples(1)));
  CHECK(second.features().feature().at("x").float_list().value(0) == 7.f);

  const tf::Input with_context = DecodeExamplesJson(R"({"context": {"x": [1.0]}, "examples": [{}, {"y": 2}]})", 64, spec);
  REQUIRE(with_context.example_list_with_context().examples_size() == 2);
  tfexample::Example context;
  REQUIRE(context.ParseFromString(with_context.example_list_with_context().context()));
  CHECK(context.features().feature().at("x").float_list().value(0) == 1.f);

  auto refusal = [](const std::string& body) {
    tf::ModelSpec ignored;
    return Refusal([&] { DecodeExamplesJson(body, 64, ignored); });
  };
  CHECK(testing::Contains(refusal(R"({"instances": [[1.0]]})"), "Missing 'examples' key"));
  CHECK(testing::Contains(refusal(R"({"examples": [{"x": [1, "a"]}]})"), "feature 'x' mixes numbers and strings"));
  CHECK(testing::Contains(refusal(R"({"examples": [{"x": true}]})"), "feature 'x' holds boolean"));
  CHECK(testing::Contains(refusal(R"({"examples": [[1.0]]})"), "example 0 is array"));
  CHECK(testing::Contains(refusal(R"({"examples": [], "inputs": {}})"), "unknown key 'inputs'"));
  CHECK(testing::Contains(refusal(R"({"examples": [{"x": "AAAA"}], "context": 3})"), "'context' is number"));
  CHECK(testing::Contains(refusal(R"({"examples": [{"image": {"b64": "!!"}}]})"), "'image'"));
  CHECK(testing::Contains(refusal("{"), "JSON Parse error"));
}

TEST_CASE("a ModelServer's REST API answers both APIs as the Predictor does, and refuses what it must with a JSON error",
          "[serving][rest]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("rest_api").string(), testing::QuietConfig());
  testing::TrainAndExport(estimator, 20, testing::RegressionServingInput,
                          ExportOptions().model(testing::RegressionIdentity()));
  const std::string base = estimator.model_dir() + "/export";
  ModelServer server(nullptr, base,
                     ModelServerOptions().port(0).rest_port(0).token("s3cret").max_request_bytes(4096).model(
                         ServedModelOptions().reload_interval(std::chrono::milliseconds(0))));
  const uint16_t port = server.rest_port();
  REQUIRE(port != 0);
  const std::string token = "Authorization: Bearer s3cret\r\n";
  const at::Tensor x = testing::Rows(0, 4);
  const TensorMap expected = Predictor(base).predict({{"x", x}});

  // The health probes answer without the token; everything else wants it.
  CHECK(testing::HttpExchange(port, "GET", "/v2/health/live").status == 200);
  CHECK(json::parse(testing::HttpExchange(port, "GET", "/v2/health/ready").body) == json{{"ready", true}});
  const testing::HttpAnswer refused = testing::HttpExchange(port, "GET", "/v2/models/served_regression");
  CHECK(refused.status == 401);
  CHECK(testing::Contains(json::parse(refused.body).at("error").get<std::string>(), "carries no token"));

  // KServe v2 infer, JSON both ways.
  json inputs = json::array();
  for (int64_t i = 0; i < 4; ++i) inputs.push_back({x[i][0].item<float>(), x[i][1].item<float>(), x[i][2].item<float>()});
  const json infer = {{"inputs", {{{"name", "x"}, {"shape", {4, 3}}, {"datatype", "FP32"}, {"data", inputs}}}}};
  const testing::HttpAnswer inferred = testing::HttpExchange(port, "POST", "/v2/models/served_regression/infer", infer.dump(), token);
  REQUIRE(inferred.status == 200);
  const json answer = json::parse(inferred.body);
  for (const json& output : answer.at("outputs")) {
    const at::Tensor want = expected.at(output.at("name").get<std::string>());
    CHECK(output.at("shape") == json{4});
    for (int64_t i = 0; i < 4; ++i) {
      if (want.scalar_type() == at::kBool)
        CHECK(output.at("data")[i].get<bool>() == want[i].item<bool>());
      else
        CHECK(output.at("data")[i].get<float>() == want[i].item<float>());
    }
  }
  // TensorFlow Serving's :predict, row format.
  const testing::HttpAnswer predicted = testing::HttpExchange(port, "POST", "/v1/models/served_regression:predict",
                                        json{{"instances", inputs}}.dump(), token);
  REQUIRE(predicted.status == 200);
  const json predictions = json::parse(predicted.body).at("predictions");
  REQUIRE(predictions.size() == 4);
  CHECK(predictions[2].at("y").get<float>() == expected.at("y")[2].item<float>());

  // Refusals: JSON errors with 4xx; the server goes on.
  const testing::HttpAnswer too_large = testing::HttpExchange(port, "POST", "/v1/models/served_regression:predict", std::string(5000, ' '), token);
  CHECK(too_large.status == 413);
  CHECK(testing::Contains(too_large.body, "over 4096 bytes"));
  // A chunked body, which says no length, is answered 413 once it grows past the limit.
  std::string chunks;
  for (int i = 0; i < 5; ++i) chunks += "3e8\r\n" + std::string(1000, ' ') + "\r\n";
  const testing::HttpAnswer chunked_too_large = testing::HttpExchange(
      port, "POST", "/v1/models/served_regression:predict", chunks + "0\r\n\r\n",
      token + "Transfer-Encoding: chunked\r\n");
  CHECK(chunked_too_large.status == 413);
  const testing::HttpAnswer unknown = testing::HttpExchange(port, "GET", "/v3/anything", "", token);
  CHECK(unknown.status == 404);
  CHECK(testing::Contains(json::parse(unknown.body).at("error").get<std::string>(), "no route /v3/anything"));
  const testing::HttpAnswer bad_json = testing::HttpExchange(port, "POST", "/v2/models/served_regression/infer", "{\"inputs\": [", token);
  CHECK(bad_json.status == 400);
  CHECK(json::parse(bad_json.body).contains("error"));
  const testing::HttpAnswer wrong_method = testing::HttpExchange(port, "GET", "/v2/models/served_regression/infer", "", token);
  CHECK(wrong_method.status == 405);
  CHECK(testing::HttpExchange(port, "POST", "/v1/models/served_regression:predict", json{{"instances", inputs}}.dump(), token).status ==
        200);

  // /metrics counts what was answered, by API and status.
  const testing::HttpAnswer metrics = testing::HttpExchange(port, "GET", "/metrics", "", token);
  REQUIRE(metrics.status == 200);
  CHECK(testing::Contains(metrics.headers, "text/plain; version=0.0.4"));
  CHECK(testing::Contains(metrics.body, "est_serve_requests_total{api=\"kserve_rest\",code=\"200\"} 1\n"));
  CHECK(testing::Contains(metrics.body, "est_serve_requests_total{api=\"tf_serving_rest\",code=\"200\"} 2\n"));
  CHECK(testing::Contains(metrics.body, "est_serve_requests_total{api=\"kserve_rest\",code=\"400\"} 1\n"));
  CHECK(testing::Contains(metrics.body, "est_serve_request_duration_seconds_count{api=\"tf_serving_rest\"}"));
  CHECK(testing::Contains(metrics.body, "est_serve_batch_size_bucket{model=\"served_regression\",le=\"4\"}"));
  CHECK(testing::Contains(metrics.body, "est_serve_model_version{model=\"served_regression\"} " +
                                            std::to_string(server.model()->current()->version())));
}

}  // namespace rest_api_test
