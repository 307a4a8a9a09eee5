// est::serving::ModelServer over gRPC, called through the protocols' own stubs: the Open
// Inference Protocol (KServe v2) and TensorFlow Serving's PredictionService answer what the
// Predictor answers; bad requests get INVALID_ARGUMENT naming the input and the server goes
// on; a full queue answers RESOURCE_EXHAUSTED; the token and TLS are enforced; a new version
// is served once it appears, a corrupt one is not.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "common/file_util.h"
#include "estimator/export/export_directory.h"
#include "serving/model_config.h"
#include "serving/model_server.h"
#include "serving/proto/grpc_inference_service.grpc.pb.h"
#include "serving/proto/health.grpc.pb.h"
#include "serving/proto/model_service.grpc.pb.h"
#include "serving/proto/prediction_service.grpc.pb.h"
#include "tests/log_capture.h"
#include "tests/serving/serving_models.h"
#include "tests/tls_certificates.h"

namespace model_server_test {
using namespace est;
using namespace est::serving;
namespace fs = std::filesystem;

namespace {

/// A model_dir with ServedRegression trained 20 steps and exported; its export base.
struct Trained {
  explicit Trained(const std::string& name, const ServingInputFn& serving_input = testing::RegressionServingInput)
      : estimator(testing::ServedRegression, testing::FreshTempDir(name).string(), testing::QuietConfig()) {
    testing::TrainAndExport(estimator, 20, serving_input, ExportOptions().model(testing::RegressionIdentity()));
  }
  std::string base() const { return estimator.model_dir() + "/export"; }
  Estimator estimator;
};

ServedModelOptions Served(bool batching = true, const ServingInputFn& serving_input = testing::RegressionServingInput) {
  return ServedModelOptions()
      .predictor(PredictorOptions().model(testing::RegressionIdentity()).serving_input_fn(serving_input))
      .batching(batching)
      .reload_interval(std::chrono::milliseconds(0));
}

ModelServerOptions Options(bool batching = true, const ServingInputFn& serving_input = testing::RegressionServingInput) {
  return ModelServerOptions().port(0).model_name("regression").model(Served(batching, serving_input));
}

/// Both protocols' stubs on one channel.
struct Client {
  explicit Client(uint16_t port, std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials())
      : channel(grpc::CreateChannel("127.0.0.1:" + std::to_string(port), credentials)),
        v2(inference::GRPCInferenceService::NewStub(channel)),
        tf(tensorflow::serving::PredictionService::NewStub(channel)) {}

  /// A context with a deadline, and the token when one is given.
  std::unique_ptr<grpc::ClientContext> context(const std::string& token = "") const {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
    return context;
  }

  grpc::Status infer(const v2::ModelInferRequest& request, v2::ModelInferResponse& response,
                     const std::string& token = "") const {
    return v2->ModelInfer(context(token).get(), request, &response);
  }

  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<inference::GRPCInferenceService::Stub> v2;
  std::unique_ptr<tensorflow::serving::PredictionService::Stub> tf;
};

/// A ModelInferRequest for "x" = `x`, its bytes raw as tritonclient sends them.
v2::ModelInferRequest InferRequest(const at::Tensor& x, const std::string& model = "regression") {
  v2::ModelInferRequest request;
  request.set_model_name(model);
  auto* input = request.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  for (int64_t size : x.sizes()) input->add_shape(size);
  request.add_raw_input_contents(std::string(static_cast<const char*>(x.data_ptr()), x.nbytes()));
  return request;
}

/// A ModelInferRequest of serialized records in BYTES input "examples", raw as tritonclient
/// sends them (each a 4-byte little-endian length, then its bytes).
v2::ModelInferRequest RecordsRequest(const std::vector<std::string>& records) {
  v2::ModelInferRequest request;
  request.set_model_name("regression");
  auto* input = request.add_inputs();
  input->set_name("examples");
  input->set_datatype("BYTES");
  input->add_shape(static_cast<int64_t>(records.size()));
  std::string raw;
  for (const std::string& record : records) {
    const uint32_t length = static_cast<uint32_t>(record.size());
    for (int byte = 0; byte < 4; ++byte) raw.push_back(static_cast<char>(length >> (8 * byte)));
    raw += record;
  }
  request.add_raw_input_contents(raw);
  return request;
}

/// The output `name` of a response, from its raw contents.
at::Tensor Output(const v2::ModelInferResponse& response, const std::string& name) {
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& output = response.outputs(i);
    if (output.name() != name) continue;
    const at::ScalarType dtype = output.datatype() == "BOOL" ? at::kBool : at::kFloat;
    std::vector<int64_t> shape(output.shape().begin(), output.shape().end());
    at::Tensor tensor = torch::empty(shape, dtype);
    const std::string& bytes = response.raw_output_contents(i);
    REQUIRE(bytes.size() == static_cast<size_t>(tensor.numel() * tensor.element_size()));
    std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
    return tensor;
  }
  FAIL("no output '" << name << "' in the response");
  return {};
}

/// A TensorProto of `x` in tensor_content.
tf::TensorProto Proto(const at::Tensor& x) {
  tf::TensorProto proto;
  proto.set_dtype(tf::DT_FLOAT);
  for (int64_t size : x.sizes()) proto.mutable_tensor_shape()->add_dim()->set_size(size);
  proto.set_tensor_content(std::string(static_cast<const char*>(x.data_ptr()), x.numel() * 4));
  return proto;
}

at::Tensor FromProto(const tf::TensorProto& proto) {
  std::vector<int64_t> shape;
  for (const auto& dim : proto.tensor_shape().dim()) shape.push_back(dim.size());
  at::Tensor tensor = torch::empty(shape, proto.dtype() == tf::DT_BOOL ? at::kBool : at::kFloat);
  REQUIRE(proto.tensor_content().size() == static_cast<size_t>(tensor.numel() * tensor.element_size()));
  std::memcpy(tensor.data_ptr(), proto.tensor_content().data(), proto.tensor_content().size());
  return tensor;
}

}  // namespace

TEST_CASE("the Open Inference Protocol answers what the Predictor answers", "[serving][server]") {
  Trained trained("server_v2");
  const Predictor predictor(testing::ServedRegression, trained.base());
  ModelServer server(testing::ServedRegression, trained.base(), Options());
  const Client client(server.port());
  const std::string version = std::to_string(predictor.version());

  v2::ServerLiveResponse live;
  REQUIRE(client.v2->ServerLive(client.context().get(), {}, &live).ok());
  CHECK(live.live());
  v2::ServerReadyResponse ready;
  REQUIRE(client.v2->ServerReady(client.context().get(), {}, &ready).ok());
  CHECK(ready.ready());
  v2::ModelReadyRequest model_ready;
  model_ready.set_name("regression");
  v2::ModelReadyResponse is_ready;
  REQUIRE(client.v2->ModelReady(client.context().get(), model_ready, &is_ready).ok());
  CHECK(is_ready.ready());
  model_ready.set_name("other");  // not ready, and no error (as Triton answers)
  REQUIRE(client.v2->ModelReady(client.context().get(), model_ready, &is_ready).ok());
  CHECK_FALSE(is_ready.ready());

  v2::ModelMetadataRequest metadata_request;
  metadata_request.set_name("regression");
  v2::ModelMetadataResponse metadata;
  REQUIRE(client.v2->ModelMetadata(client.context().get(), metadata_request, &metadata).ok());
  CHECK(metadata.versions_size() == 1);
  CHECK(metadata.versions(0) == version);
  REQUIRE(metadata.inputs_size() == 1);
  CHECK(metadata.inputs(0).name() == "x");
  CHECK(metadata.inputs(0).datatype() == "FP32");
  CHECK(std::vector<int64_t>(metadata.inputs(0).shape().begin(), metadata.inputs(0).shape().end()) ==
        std::vector<int64_t>{-1, 3});
  REQUIRE(metadata.outputs_size() == 2);

  const at::Tensor x = testing::Rows(0, 8);
  const TensorMap expected = predictor.predict({{"x", x}});
  v2::ModelInferRequest request = InferRequest(x);
  request.set_id("request-7");
  v2::ModelInferResponse response;
  const grpc::Status status = client.infer(request, response);
  REQUIRE(status.ok());
  CHECK(response.model_name() == "regression");
  CHECK(response.model_version() == version);
  CHECK(response.id() == "request-7");
  CHECK(torch::allclose(Output(response, "y"), expected.at("y"), 1e-6, 1e-6));
  CHECK(torch::equal(Output(response, "positive"), expected.at("positive")));

  SECTION("one output asked for, and typed contents instead of raw bytes") {
    v2::ModelInferRequest typed = InferRequest(x);
    typed.clear_raw_input_contents();
    for (int64_t i = 0; i < x.numel(); ++i) typed.mutable_inputs(0)->mutable_contents()->add_fp32_contents(x.view(-1)[i].item<float>());
    typed.add_outputs()->set_name("positive");
    v2::ModelInferResponse answer;
    REQUIRE(client.infer(typed, answer).ok());
    REQUIRE(answer.outputs_size() == 1);
    CHECK(torch::equal(Output(answer, "positive"), expected.at("positive")));
  }
  SECTION("one row at a time, by concurrent clients, answers the same rows") {
    std::vector<std::future<at::Tensor>> answers;
    for (int64_t row = 0; row < 8; ++row)
      answers.push_back(std::async(std::launch::async, [&client, row] {
        v2::ModelInferResponse answer;
        const grpc::Status called = client.infer(InferRequest(testing::Rows(row, 1)), answer);
        return called.ok() ? Output(answer, "y") : at::Tensor();
      }));
    for (int64_t row = 0; row < 8; ++row) {
      const at::Tensor y = answers[row].get();
      REQUIRE(y.defined());
      CHECK(torch::allclose(y, expected.at("y").narrow(0, row, 1), 1e-6, 1e-6));
    }
  }
}

TEST_CASE("bad requests get INVALID_ARGUMENT or NOT_FOUND naming what is wrong, and the server goes on",
          "[serving][server]") {
  Trained trained("server_bad_requests");
  ModelServer server(testing::ServedRegression, trained.base(), Options());
  const Client client(server.port());
  auto refusal = [&](const v2::ModelInferRequest& request) {
    v2::ModelInferResponse response;
    const grpc::Status status = client.infer(request, response);
    return std::make_pair(status.error_code(), status.error_message());
  };
  const at::Tensor x = testing::Rows(0, 2);
  using Code = grpc::StatusCode;

  v2::ModelInferRequest renamed = InferRequest(x);
  renamed.mutable_inputs(0)->set_name("z");
  auto [code, message] = refusal(renamed);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("'z'") && Catch::Contains("takes 'x'"));

  v2::ModelInferRequest wrong_type = InferRequest(x.to(at::kDouble));
  wrong_type.mutable_inputs(0)->set_datatype("FP64");
  std::tie(code, message) = refusal(wrong_type);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("'x'") && Catch::Contains("float32"));

  std::tie(code, message) = refusal(InferRequest(testing::Rows(0, 4).reshape({3, 4})));
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("'x'") && Catch::Contains("[-1, 3]"));

  v2::ModelInferRequest short_bytes = InferRequest(x);
  short_bytes.set_raw_input_contents(0, short_bytes.raw_input_contents(0).substr(4));
  std::tie(code, message) = refusal(short_bytes);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("'x' carries 20 bytes; expected 24"));

  v2::ModelInferRequest huge = InferRequest(x);
  huge.mutable_inputs(0)->set_shape(0, int64_t{1} << 40);
  std::tie(code, message) = refusal(huge);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("'x' is too large"));

  // Empty, but its other sizes would overflow the strides: refused, typed values and raw bytes alike.
  for (bool raw : {false, true}) {
    v2::ModelInferRequest empty_huge = InferRequest(x);
    v2::ModelInferRequest::InferInputTensor& input = *empty_huge.mutable_inputs(0);
    input.clear_shape();
    for (int64_t size : {int64_t{0}, int64_t{1} << 40, int64_t{1} << 40}) input.add_shape(size);
    empty_huge.clear_raw_input_contents();
    if (raw) empty_huge.add_raw_input_contents("");
    std::tie(code, message) = refusal(empty_huge);
    CHECK(code == Code::INVALID_ARGUMENT);
    CHECK_THAT(message, Catch::Contains("'x' is too large: its shape [0, 1099511627776, 1099511627776] has other "
                                        "sizes whose product exceeds"));
  }

  v2::ModelInferRequest negative = InferRequest(x);  // no rows, and a size below 0 after them
  negative.mutable_inputs(0)->set_shape(0, 0);
  negative.mutable_inputs(0)->set_shape(1, -3);
  negative.set_raw_input_contents(0, "");
  std::tie(code, message) = refusal(negative);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("'x' has size -3"));

  v2::ModelInferRequest strange = InferRequest(x);
  strange.mutable_inputs(0)->set_datatype("UINT64");
  std::tie(code, message) = refusal(strange);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("'x' has datatype 'UINT64'") && Catch::Contains("FP32"));

  std::tie(code, message) = refusal(InferRequest(x, "other"));
  CHECK(code == Code::NOT_FOUND);
  CHECK_THAT(message, Catch::StartsWith("Request for unknown model: 'other'"));

  v2::ModelInferRequest old_version = InferRequest(x);
  old_version.set_model_version("1");
  std::tie(code, message) = refusal(old_version);
  CHECK(code == Code::NOT_FOUND);
  CHECK_THAT(message, Catch::Contains("version 1 is not found"));

  v2::ModelInferRequest unknown_output = InferRequest(x);
  unknown_output.add_outputs()->set_name("w");
  std::tie(code, message) = refusal(unknown_output);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("output 'w'"));

  v2::ModelInferRequest strings = RecordsRequest(testing::ExampleRecords(x));
  strings.mutable_inputs(0)->set_name("x");
  std::tie(code, message) = refusal(strings);
  CHECK(code == Code::INVALID_ARGUMENT);
  CHECK_THAT(message, Catch::Contains("input 'x' holds byte strings; expected x: float32 [-1, 3]"));

  // And the server still answers.
  v2::ModelInferResponse response;
  CHECK(client.infer(InferRequest(x), response).ok());
}

TEST_CASE("serialized tf.Example records in BYTES and DT_STRING inputs are parsed by the export's serving input",
          "[serving][server][records]") {
  Trained trained("server_records", testing::RegressionRecordsInput);
  const Predictor predictor(testing::ServedRegression, trained.base(),
                            PredictorOptions().serving_input_fn(testing::RegressionRecordsInput));
  ModelServer server(testing::ServedRegression, trained.base(), Options(true, testing::RegressionRecordsInput));
  const Client client(server.port());
  const at::Tensor x = testing::Rows(0, 4);
  const TensorMap expected = predictor.predict({{"x", x}});
  const std::vector<std::string> records = testing::ExampleRecords(x);

  // KServe: raw, then typed bytes_contents.
  v2::ModelInferResponse response;
  REQUIRE(client.infer(RecordsRequest(records), response).ok());
  CHECK(torch::allclose(Output(response, "y"), expected.at("y"), 1e-6, 1e-6));
  v2::ModelInferRequest typed = RecordsRequest(records);
  typed.clear_raw_input_contents();
  for (const std::string& record : records) typed.mutable_inputs(0)->mutable_contents()->add_bytes_contents(record);
  REQUIRE(client.infer(typed, response).ok());
  CHECK(torch::allclose(Output(response, "y"), expected.at("y"), 1e-6, 1e-6));
  v2::ModelMetadataRequest metadata_request;
  metadata_request.set_name("regression");
  v2::ModelMetadataResponse metadata;
  REQUIRE(client.v2->ModelMetadata(client.context().get(), metadata_request, &metadata).ok());
  REQUIRE(metadata.inputs_size() == 1);
  CHECK(metadata.inputs(0).name() == "examples");
  CHECK(metadata.inputs(0).datatype() == "BYTES");
  CHECK(std::vector<int64_t>(metadata.inputs(0).shape().begin(), metadata.inputs(0).shape().end()) ==
        std::vector<int64_t>{-1});

  // TensorFlow Serving: DT_STRING in string_val.
  tf::PredictRequest request;
  request.mutable_model_spec()->set_name("regression");
  tf::TensorProto& proto = (*request.mutable_inputs())["examples"];
  proto.set_dtype(tf::DT_STRING);
  proto.mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(records.size()));
  for (const std::string& record : records) proto.add_string_val(record);
  tf::PredictResponse answer;
  REQUIRE(client.tf->Predict(client.context().get(), request, &answer).ok());
  CHECK(torch::allclose(FromProto(answer.outputs().at("y")), expected.at("y"), 1e-6, 1e-6));
  tf::GetModelMetadataRequest signature_request;
  signature_request.mutable_model_spec()->set_name("regression");
  signature_request.add_metadata_field("signature_def");
  tf::GetModelMetadataResponse signature_response;
  REQUIRE(client.tf->GetModelMetadata(client.context().get(), signature_request, &signature_response).ok());
  tf::SignatureDefMap signatures;
  REQUIRE(signatures.ParseFromString(signature_response.metadata().at("signature_def").value()));
  const auto& inputs = signatures.signature_def().at("serving_default").inputs();
  REQUIRE(inputs.size() == 1);
  CHECK(inputs.at("examples").dtype() == tf::DT_STRING);

  // Bad requests name what is wrong.
  auto refusal = [&](const v2::ModelInferRequest& bad) {
    const grpc::Status status = client.infer(bad, response);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    return status.error_message();
  };
  CHECK_THAT(refusal(InferRequest(x)), Catch::Contains("the request has input 'x', which the model does not take; "
                                                       "it takes the input 'examples' of serialized records"));
  CHECK_THAT(refusal(RecordsRequest({records[0], testing::ExampleRecord({1, 2})})),
             Catch::Contains("record 1 of input 'examples'"));
  v2::ModelInferRequest matrix = RecordsRequest(records);
  matrix.mutable_inputs(0)->set_shape(0, 2);
  matrix.mutable_inputs(0)->add_shape(2);
  CHECK_THAT(refusal(matrix), Catch::Contains("'examples' has shape [2, 2]; expected [-1], one serialized record"));
  v2::ModelInferRequest cut = RecordsRequest(records);
  cut.set_raw_input_contents(0, cut.raw_input_contents(0).substr(0, 40));
  CHECK_THAT(refusal(cut), Catch::Contains("input 'examples'") && Catch::Contains("follow"));
  v2::ModelInferRequest too_many = RecordsRequest(records);
  too_many.mutable_inputs(0)->set_shape(0, 3);
  CHECK_THAT(refusal(too_many), Catch::Contains("after its 3 byte strings"));
  // And the server still answers.
  CHECK(client.infer(RecordsRequest(records), response).ok());
}

TEST_CASE("TensorFlow Serving's Predict and GetModelMetadata answer what the Predictor answers",
          "[serving][server]") {
  Trained trained("server_tf");
  const Predictor predictor(testing::ServedRegression, trained.base());
  ModelServer server(testing::ServedRegression, trained.base(), Options(false));
  const Client client(server.port());
  const at::Tensor x = testing::Rows(0, 5);
  const TensorMap expected = predictor.predict({{"x", x}});

  tf::PredictRequest request;
  request.mutable_model_spec()->set_name("regression");
  (*request.mutable_inputs())["x"] = Proto(x);
  tf::PredictResponse response;
  REQUIRE(client.tf->Predict(client.context().get(), request, &response).ok());
  CHECK(response.model_spec().version().value() == predictor.version());
  CHECK(response.model_spec().signature_name() == "serving_default");
  CHECK(torch::allclose(FromProto(response.outputs().at("y")), expected.at("y"), 1e-6, 1e-6));
  CHECK(torch::equal(FromProto(response.outputs().at("positive")), expected.at("positive")));

  SECTION("typed values, the last repeated as TensorFlow reads them, and an output filter") {
    tf::PredictRequest typed;
    typed.mutable_model_spec()->set_name("regression");
    typed.mutable_model_spec()->mutable_version()->set_value(predictor.version());
    tf::TensorProto& proto = (*typed.mutable_inputs())["x"];
    proto.set_dtype(tf::DT_FLOAT);
    proto.mutable_tensor_shape()->add_dim()->set_size(2);
    proto.mutable_tensor_shape()->add_dim()->set_size(3);
    proto.add_float_val(0.5f);
    typed.add_output_filter("y");
    tf::PredictResponse answer;
    REQUIRE(client.tf->Predict(client.context().get(), typed, &answer).ok());
    CHECK(answer.outputs().size() == 1);
    const TensorMap halves = predictor.predict({{"x", torch::full({2, 3}, 0.5f)}});
    CHECK(torch::allclose(FromProto(answer.outputs().at("y")), halves.at("y"), 1e-6, 1e-6));
  }
  SECTION("a signature or version the server does not have, and a missing spec") {
    tf::PredictRequest other = request;
    other.mutable_model_spec()->set_signature_name("classify");
    tf::PredictResponse answer;
    grpc::Status status = client.tf->Predict(client.context().get(), other, &answer);
    CHECK(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK_THAT(status.error_message(), Catch::Contains("\"classify\" not found"));
    other = request;
    other.mutable_model_spec()->mutable_version()->set_value(3);
    status = client.tf->Predict(client.context().get(), other, &answer);
    CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK_THAT(status.error_message(), Catch::Contains("Specific(regression, 3)"));
    other.clear_model_spec();
    status = client.tf->Predict(client.context().get(), other, &answer);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(status.error_message() == "Missing ModelSpec");
  }
  SECTION("the signature as a SignatureDefMap") {
    tf::GetModelMetadataRequest metadata_request;
    metadata_request.mutable_model_spec()->set_name("regression");
    metadata_request.add_metadata_field("signature_def");
    tf::GetModelMetadataResponse metadata;
    REQUIRE(client.tf->GetModelMetadata(client.context().get(), metadata_request, &metadata).ok());
    const google::protobuf::Any& any = metadata.metadata().at("signature_def");
    CHECK(any.type_url() == "type.googleapis.com/tensorflow.serving.SignatureDefMap");
    tf::SignatureDefMap signatures;
    REQUIRE(signatures.ParseFromString(any.value()));
    const tf::SignatureDef& signature = signatures.signature_def().at("serving_default");
    CHECK(signature.method_name() == "tensorflow/serving/predict");
    CHECK(signature.inputs().at("x").dtype() == tf::DT_FLOAT);
    CHECK(signature.inputs().at("x").tensor_shape().dim(0).size() == -1);
    CHECK(signature.outputs().at("positive").dtype() == tf::DT_BOOL);
  }
}

TEST_CASE("a full queue answers RESOURCE_EXHAUSTED and a deadline DEADLINE_EXCEEDED", "[serving][server]") {
  Trained trained("server_queue");
  ModelServerOptions options = Options();
  options.model().batching_options(
      BatchingOptions().max_queue_size(1).max_batch_size(64).max_queue_delay(std::chrono::milliseconds(1500)));
  ModelServer server(testing::ServedRegression, trained.base(), options);
  const Client client(server.port());
  // The first request waits 1.5 s in the queue for others: the queue is full meanwhile.
  auto first = std::async(std::launch::async, [&] {
    v2::ModelInferResponse response;
    return client.infer(InferRequest(testing::Rows(0, 1)), response).error_code();
  });
  while (server.model()->batching_stats().queued == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  v2::ModelInferResponse response;
  const grpc::Status full = client.infer(InferRequest(testing::Rows(1, 1)), response);
  CHECK(full.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(full.error_message(), Catch::Contains("queue is full"));
  CHECK(first.get() == grpc::StatusCode::OK);

  // A request whose deadline comes before its batch runs.
  grpc::ClientContext short_deadline;
  short_deadline.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  const grpc::Status late = client.v2->ModelInfer(&short_deadline, InferRequest(testing::Rows(2, 1)), &response);
  CHECK(late.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server dropped it too: counted expired when its batch ran, not computed.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server.model()->batching_stats().expired == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(server.model()->batching_stats().expired == 1);
}

TEST_CASE("a server with a token refuses calls without it", "[serving][server]") {
  Trained trained("server_token");
  ModelServer server(testing::ServedRegression, trained.base(), Options().token("s3cret"));
  const Client client(server.port());
  v2::ModelInferResponse response;
  grpc::Status status = client.infer(InferRequest(testing::Rows(0, 1)), response);
  CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_THAT(status.error_message(), Catch::Contains("no token") && Catch::Contains("authorization: Bearer"));
  status = client.infer(InferRequest(testing::Rows(0, 1)), response, "wrong");
  CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_THAT(status.error_message(), Catch::Contains("token is wrong"));
  tf::PredictRequest request;
  request.mutable_model_spec()->set_name("regression");
  tf::PredictResponse answer;
  CHECK(client.tf->Predict(client.context().get(), request, &answer).error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(client.infer(InferRequest(testing::Rows(0, 1)), response, "s3cret").ok());
}

TEST_CASE("ModelService.GetModelStatus says the version served is AVAILABLE, and NOT_FOUND for another",
          "[serving][server]") {
  Trained trained("server_model_status");
  ModelServer server(testing::ServedRegression, trained.base(), Options());
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials());
  auto stub = tensorflow::serving::ModelService::NewStub(channel);
  auto status_of = [&](std::optional<int64_t> version, tf::GetModelStatusResponse& response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    tf::GetModelStatusRequest request;
    request.mutable_model_spec()->set_name("regression");
    if (version) request.mutable_model_spec()->mutable_version()->set_value(*version);
    return stub->GetModelStatus(&context, request, &response);
  };
  const int64_t served = server.model()->current()->version();
  for (const std::optional<int64_t> version : {std::optional<int64_t>(), std::optional<int64_t>(served)}) {
    tf::GetModelStatusResponse response;
    REQUIRE(status_of(version, response).ok());
    REQUIRE(response.model_version_status_size() == 1);
    CHECK(response.model_version_status(0).version() == served);
    CHECK(response.model_version_status(0).state() == tf::ModelVersionStatus::AVAILABLE);
    CHECK(response.model_version_status(0).status().error_code() == 0);
  }
  tf::GetModelStatusResponse other;
  const grpc::Status refused = status_of(served + 1, other);
  CHECK(refused.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK_THAT(refused.error_message(), Catch::Contains(std::to_string(served + 1)));
}

TEST_CASE("grpc.health.v1.Health says SERVING without a token, NOT_SERVING once the server stops",
          "[serving][server]") {
  Trained trained("server_health");
  ModelServer server(testing::ServedRegression, trained.base(), Options().token("s3cret"));
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  auto check = [&](const std::string& service, grpc::health::v1::HealthCheckResponse& response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    return health->Check(&context, request, &response);
  };
  for (const std::string service : {"", "inference.GRPCInferenceService", "tensorflow.serving.PredictionService",
                                    "regression"}) {
    INFO("service '" << service << "'");
    grpc::health::v1::HealthCheckResponse response;
    REQUIRE(check(service, response).ok());
    CHECK(response.status() == grpc::health::v1::HealthCheckResponse::SERVING);
  }
  grpc::health::v1::HealthCheckResponse unknown;
  CHECK(check("no.such.Service", unknown).error_code() == grpc::StatusCode::NOT_FOUND);

  // A watch sees SERVING, then NOT_SERVING when the server stops, and ends.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::health::v1::HealthCheckRequest request;
  auto watch = health->Watch(&context, request);
  grpc::health::v1::HealthCheckResponse seen;
  REQUIRE(watch->Read(&seen));
  CHECK(seen.status() == grpc::health::v1::HealthCheckResponse::SERVING);
  std::thread stopper([&] { server.shutdown(std::chrono::seconds(5)); });
  REQUIRE(watch->Read(&seen));
  CHECK(seen.status() == grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  CHECK_FALSE(watch->Read(&seen));
  CHECK(watch->Finish().ok());
  stopper.join();
}

TEST_CASE("a server over TLS answers clients that trust its authority only", "[serving][server]") {
  Trained trained("server_tls");
  const fs::path dir = testing::FreshTempDir("server_tls_certificates");
  testing::MakeCertificate(dir, "ca");
  testing::MakeCertificate(dir, "server", "ca");
  net::TlsOptions tls;
  tls.cert_file = (dir / "server.pem").string();
  tls.key_file = (dir / "server.key").string();
  ModelServer server(testing::ServedRegression, trained.base(), Options().tls(tls));
  grpc::SslCredentialsOptions trusted;
  std::ifstream ca(dir / "ca.pem");
  trusted.pem_root_certs.assign(std::istreambuf_iterator<char>(ca), {});
  const Client over_tls(server.port(), grpc::SslCredentials(trusted));
  v2::ModelInferResponse response;
  CHECK(over_tls.infer(InferRequest(testing::Rows(0, 1)), response).ok());
  const Client plain(server.port());
  CHECK(plain.infer(InferRequest(testing::Rows(0, 1)), response).error_code() == grpc::StatusCode::UNAVAILABLE);
}

TEST_CASE("a new version is served once it appears, and a corrupt one only once mended",
          "[serving][server][reload]") {
  Trained trained("server_reload");
  ModelServerOptions options = Options();
  options.model().reload_interval(std::chrono::milliseconds(50));
  ModelServer server(testing::ServedRegression, trained.base(), options);
  const Client client(server.port());
  const int64_t first = server.model()->current()->version();
  auto served_version = [&] {
    v2::ModelInferResponse response;
    REQUIRE(client.infer(InferRequest(testing::Rows(0, 2)), response).ok());
    return response;
  };

  // A corrupt version: a manifest that does not parse. It is logged and skipped.
  const fs::path corrupt = fs::path(trained.base()) / std::to_string(first + 1);
  fs::create_directories(corrupt);
  std::ofstream(corrupt / "export.json") << "{ not json";
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server.model()->stats().failed_reloads == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(server.model()->stats().failed_reloads == 1);
  CHECK(served_version().model_version() == std::to_string(first));
  // It is not tried again while its files stay as they are.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(server.model()->stats().failed_reloads == 1);

  // Its files mended (the first version's copied in, as a copy by hand finishes): served.
  for (const char* file : {"variables.pt", "export.json"})
    fs::copy_file(fs::path(trained.base()) / std::to_string(first) / file, corrupt / file,
                  fs::copy_options::overwrite_existing);
  while (server.model()->current()->version() != first + 1 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(served_version().model_version() == std::to_string(first + 1));

  // A good version after it: trained further, so its predictions differ.
  const std::string newer = testing::TrainAndExport(trained.estimator, 40, testing::RegressionServingInput,
                                                    ExportOptions().model(testing::RegressionIdentity()));
  const Predictor expected(testing::ServedRegression, newer);
  REQUIRE(expected.version() > first + 1);
  while (server.model()->current()->version() != expected.version() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const v2::ModelInferResponse response = served_version();
  CHECK(response.model_version() == std::to_string(expected.version()));
  CHECK(torch::allclose(Output(response, "y"), expected.predict({{"x", testing::Rows(0, 2)}}).at("y"), 1e-6, 1e-6));
  CHECK(server.model()->stats().reloads == 2);
  CHECK(server.model()->stats().failed_reloads == 1);
}

TEST_CASE("traced exports reloaded under load: no request fails, a corrupt program is refused and the old one serves on",
          "[serving][server][reload]") {
  Trained trained("server_program_reload");
  ModelServerOptions options = Options();
  options.model().reload_interval(std::chrono::milliseconds(50)).predictor(PredictorOptions());
  ModelServer server(nullptr, trained.base(), options);  // the exports' programs, no model_fn
  REQUIRE(server.model()->current()->runs_program());
  const int64_t first = server.model()->current()->version();

  // Four clients ask all along; every answer must be OK, from whichever version served it.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> answered{0}, failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&] {
      const Client client(server.port());
      while (!stop) {
        v2::ModelInferResponse response;
        (client.infer(InferRequest(testing::Rows(0, 2)), response).ok() ? answered : failed)++;
      }
    });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);

  // A version whose program is corrupt (one byte flipped): refused, the first serves on.
  const fs::path corrupt = fs::path(trained.base()) / std::to_string(first + 1);
  fs::copy(fs::path(trained.base()) / std::to_string(first), corrupt);
  {
    std::fstream program(corrupt / "model.pt", std::ios::in | std::ios::out | std::ios::binary);
    program.seekp(64);
    program.put('\x55');
  }
  while (server.model()->stats().failed_reloads == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(server.model()->stats().failed_reloads == 1);
  CHECK(server.model()->current()->version() == first);

  // A newer version, trained further: served, its program's answers.
  const std::string newer = testing::TrainAndExport(trained.estimator, 40, testing::RegressionServingInput,
                                                    ExportOptions().model(testing::RegressionIdentity()));
  const Predictor expected(newer);
  while (server.model()->current()->version() != expected.version() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int64_t answered_before = answered;
  while (answered < answered_before + 20 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  for (auto& client : clients) client.join();
  CHECK(failed == 0);
  CHECK(answered > 20);
  const Client client(server.port());
  v2::ModelInferResponse response;
  REQUIRE(client.infer(InferRequest(testing::Rows(0, 2)), response).ok());
  CHECK(response.model_version() == std::to_string(expected.version()));
  CHECK(torch::allclose(Output(response, "y"), expected.predict({{"x", testing::Rows(0, 2)}}).at("y"), 1e-6, 1e-6));
  CHECK(server.model()->stats().reloads == 1);
}

TEST_CASE("a server whose newest versions are corrupt serves the newest that loads, and says why the others do not",
          "[serving][server][reload]") {
  Trained trained("server_corrupt_newest");
  const int64_t good = ExportVersions(trained.base()).back();
  const fs::path base = trained.base();
  const std::string manifest = est::ReadFile((base / std::to_string(good) / "export.json").string());
  // Version good + 1: params nested 200 000 deep (which a recursive copy of the value would
  // overflow the stack on); good + 2: a manifest that is not JSON.
  const size_t params = manifest.find("\"params\": {}");
  REQUIRE(params != std::string::npos);
  const std::string deep = manifest.substr(0, params) + "\"params\": " + std::string(200000, '[') +
                           std::string(200000, ']') + manifest.substr(params + 12);
  for (const auto& [version, text] : {std::pair<int64_t, std::string>{good + 1, deep}, {good + 2, "{ not json"}}) {
    fs::create_directories(base / std::to_string(version));
    fs::copy_file(base / std::to_string(good) / "variables.pt", base / std::to_string(version) / "variables.pt");
    std::ofstream(base / std::to_string(version) / "export.json") << text;
  }
  est::testing::LogCapture log;
  ModelServerOptions options = Options();
  options.model().reload_interval(std::chrono::milliseconds(50));
  ModelServer server(testing::ServedRegression, trained.base(), options);
  CHECK(server.model()->current()->version() == good);
  const std::string text = log.text();
  CHECK(text.find("est-serve: version " + std::to_string(good + 2) + " at '" + (base / std::to_string(good + 2)).string() +
                  "' does not load, so it is not served") != std::string::npos);
  CHECK(text.find("est-serve: version " + std::to_string(good + 1)) != std::string::npos);
  CHECK(text.find("nested deeper than 100 arrays and objects") != std::string::npos);
  CHECK(text.find("serving version " + std::to_string(good) + " (global step 20) of '" + trained.base() + "'") !=
        std::string::npos);
  // Neither is tried again as it is; once mended, the newest is served.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(server.model()->stats().failed_reloads == 0);
  CHECK(server.model()->current()->version() == good);
  est::WriteFileAtomic((base / std::to_string(good + 2) / "export.json").string(), manifest);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server.model()->current()->version() != good + 2 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(server.model()->current()->version() == good + 2);

  // No version loads: one error naming each.
  fs::remove_all(base / std::to_string(good));
  std::ofstream(base / std::to_string(good + 2) / "export.json") << "[";
  CHECK_THROWS_MATCHES(ModelServer(testing::ServedRegression, trained.base(), Options()), CheckpointError,
                       est::testing::MessageMatches(
                           Catch::StartsWith("model 'regression' (base path '" + trained.base() +
                                             "') cannot be served: no version under '" + trained.base() +
                                             "' that version policy latest 1 names loads (version " +
                                             std::to_string(good + 2) + ": ") &&
                           Catch::Contains("; version " + std::to_string(good + 1) + ": ") &&
                           Catch::Contains("nested deeper than 100")));
}

TEST_CASE("a request of more examples than a batch runs in parts on one version; one beyond the bound is refused",
          "[serving][server]") {
  Trained trained("server_parts");
  const Predictor whole(testing::ServedRegression, trained.base());
  for (const bool batching : {true, false}) {
    ServedModelOptions options = Served(batching);
    options.batching_options(BatchingOptions().max_batch_size(4)).max_request_examples(10);
    const ServedModel model(testing::ServedRegression, trained.base(), options);
    int64_t version = -1;
    // 9 examples: parts of 4, 4 and 1, answered as the whole request is at once.
    const TensorMap parts = model.predict({{"x", testing::Rows(0, 9)}}, std::chrono::steady_clock::time_point::max(),
                                          &version);
    const TensorMap expected = whole.predict({{"x", testing::Rows(0, 9)}});
    CHECK(version == whole.version());
    REQUIRE(parts.size() == expected.size());
    for (const auto& [name, tensor] : expected) CHECK(torch::allclose(parts.at(name), tensor, 1e-6, 1e-6));
    CHECK(model.batching_stats().batches == 0);  // the parts ran on the model, not in the batcher's batches
    CHECK_THROWS_MATCHES(model.predict({{"x", testing::Rows(0, 11)}}, std::chrono::steady_clock::time_point::max()),
                         RequestError,
                         est::testing::MessageMatches(Catch::Equals(
                             "the request carries 11 examples; the most a request may carry is 10 (max_request_examples, "
                             "est-serve --max-request-examples): send them in several requests")));
    // A deadline passed between the parts.
    CHECK_THROWS_MATCHES(model.predict({{"x", testing::Rows(0, 9)}}, std::chrono::steady_clock::now()), TimeoutError,
                         est::testing::MessageMatches(Catch::StartsWith("the request's deadline passed after 0 of its 9 "
                                                                        "examples")));
  }
}

TEST_CASE("a request larger than max_request_bytes is refused naming --max-request-mib", "[serving][server]") {
  Trained trained("server_too_large");
  ModelServerOptions options = Options();
  options.max_request_bytes(4096);
  ModelServer server(testing::ServedRegression, trained.base(), options);
  const Client client(server.port());
  v2::ModelInferResponse response;
  // 6000 bytes of x: beyond the limit, within the twice that gRPC takes.
  const grpc::Status refused = client.infer(InferRequest(torch::ones({500, 3})), response);
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(refused.error_message(), Catch::StartsWith("the request is ") &&
                                          Catch::EndsWith(" bytes; the most a request may carry is 4096 "
                                                          "(max_request_bytes, est-serve --max-request-mib)"));
  CHECK(client.infer(InferRequest(testing::Rows(0, 2)), response).ok());
}

TEST_CASE("several models and versions from one config: a request names a version, a label or none",
          "[serving][server][versions]") {
  Trained trained("server_versions");
  const Predictor first(testing::ServedRegression, trained.base());
  const Predictor second(testing::ServedRegression,
                         testing::TrainAndExport(trained.estimator, 40, testing::RegressionServingInput,
                                                 ExportOptions().model(testing::RegressionIdentity())));
  Trained other("server_versions_other");
  const Predictor other_predictor(testing::ServedRegression, other.base());
  const std::string v1 = std::to_string(first.version());
  const std::string v2 = std::to_string(second.version());
  ModelServer server(testing::ServedRegression,
                     {ModelConfig()
                          .name("regression")
                          .base_path(trained.base())
                          .version_policy(VersionPolicy::All())
                          .version_labels({{"stable", first.version()}, {"canary", second.version()}}),
                      ModelConfig().name("other").base_path(other.base())},
                     Options());
  CHECK(server.model_names() == std::vector<std::string>{"other", "regression"});
  const Client client(server.port());
  const at::Tensor x = testing::Rows(0, 4);

  // KServe v2: no version is the newest; a version number is that version.
  auto infer = [&](const std::string& model, const std::string& version, v2::ModelInferResponse& response) {
    v2::ModelInferRequest request = InferRequest(x, model);
    request.set_model_version(version);
    return client.infer(request, response);
  };
  v2::ModelInferResponse response;
  REQUIRE(infer("regression", "", response).ok());
  CHECK(response.model_version() == v2);
  CHECK(torch::allclose(Output(response, "y"), second.predict({{"x", x}}).at("y"), 1e-6, 1e-6));
  REQUIRE(infer("regression", v1, response).ok());
  CHECK(response.model_version() == v1);
  CHECK(torch::allclose(Output(response, "y"), first.predict({{"x", x}}).at("y"), 1e-6, 1e-6));
  CHECK_FALSE(torch::allclose(Output(response, "y"), second.predict({{"x", x}}).at("y"), 1e-6, 1e-6));
  REQUIRE(infer("other", "", response).ok());
  CHECK(response.model_name() == "other");
  CHECK(torch::allclose(Output(response, "y"), other_predictor.predict({{"x", x}}).at("y"), 1e-6, 1e-6));
  const grpc::Status unknown_version = infer("regression", "999", response);
  CHECK(unknown_version.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK_THAT(unknown_version.error_message(), Catch::Contains("versions served: " + v1 + ", " + v2));
  const grpc::Status unknown_model = infer("nope", "", response);
  CHECK(unknown_model.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK_THAT(unknown_model.error_message(), Catch::Contains("serves 'other', 'regression'"));

  v2::ModelMetadataRequest metadata_request;
  metadata_request.set_name("regression");
  v2::ModelMetadataResponse metadata;
  REQUIRE(client.v2->ModelMetadata(client.context().get(), metadata_request, &metadata).ok());
  CHECK(std::vector<std::string>(metadata.versions().begin(), metadata.versions().end()) ==
        std::vector<std::string>{v1, v2});
  v2::ModelReadyRequest ready_request;
  ready_request.set_name("regression");
  ready_request.set_version(v1);
  v2::ModelReadyResponse ready;
  REQUIRE(client.v2->ModelReady(client.context().get(), ready_request, &ready).ok());
  CHECK(ready.ready());
  ready_request.set_version("999");
  REQUIRE(client.v2->ModelReady(client.context().get(), ready_request, &ready).ok());
  CHECK_FALSE(ready.ready());

  // TensorFlow Serving: a label names its version; an unknown label is refused naming the known.
  auto predict = [&](const std::function<void(tf::ModelSpec&)>& spec, tf::PredictResponse& answer) {
    tf::PredictRequest request;
    request.mutable_model_spec()->set_name("regression");
    spec(*request.mutable_model_spec());
    (*request.mutable_inputs())["x"] = Proto(x);
    return client.tf->Predict(client.context().get(), request, &answer);
  };
  tf::PredictResponse answer;
  REQUIRE(predict([](tf::ModelSpec& spec) { spec.set_version_label("stable"); }, answer).ok());
  CHECK(answer.model_spec().version().value() == first.version());
  CHECK(torch::allclose(FromProto(answer.outputs().at("y")), first.predict({{"x", x}}).at("y"), 1e-6, 1e-6));
  REQUIRE(predict([](tf::ModelSpec& spec) { spec.set_version_label("canary"); }, answer).ok());
  CHECK(answer.model_spec().version().value() == second.version());
  REQUIRE(predict([&](tf::ModelSpec& spec) { spec.mutable_version()->set_value(first.version()); }, answer).ok());
  CHECK(answer.model_spec().version().value() == first.version());
  const grpc::Status unknown_label = predict([](tf::ModelSpec& spec) { spec.set_version_label("beta"); }, answer);
  CHECK(unknown_label.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(unknown_label.error_message(), Catch::Contains("Unrecognized servable version label: beta") &&
                                                Catch::Contains("'canary' (" + v2 + ")"));

  // ModelService lists both versions; health knows both models.
  auto model_service = tensorflow::serving::ModelService::NewStub(client.channel);
  tf::GetModelStatusRequest status_request;
  status_request.mutable_model_spec()->set_name("regression");
  tf::GetModelStatusResponse status;
  REQUIRE(model_service->GetModelStatus(client.context().get(), status_request, &status).ok());
  REQUIRE(status.model_version_status_size() == 2);
  CHECK(status.model_version_status(0).version() == first.version());
  CHECK(status.model_version_status(1).version() == second.version());
  auto health = grpc::health::v1::Health::NewStub(client.channel);
  grpc::health::v1::HealthCheckRequest check;
  grpc::health::v1::HealthCheckResponse healthy;
  check.set_service("other");
  REQUIRE(health->Check(client.context().get(), check, &healthy).ok());
  CHECK(healthy.status() == grpc::health::v1::HealthCheckResponse::SERVING);
  check.set_service("nope");
  CHECK(health->Check(client.context().get(), check, &healthy).error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("a version or model no longer served answers the requests it has, and is then freed",
          "[serving][server][versions]") {
  Trained trained("server_unload");
  ModelServerOptions options = Options();
  options.model().version_policy(VersionPolicy::Latest(1));
  ModelServer server(testing::ServedRegression, trained.base(), options);
  const int64_t first = server.model()->current()->version();
  std::weak_ptr<const Predictor> first_loaded = server.model()->find(first);

  // Four clients ask for the first version by number all along.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> answered{0}, not_found{0}, failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&] {
      const Client client(server.port());
      while (!stop) {
        v2::ModelInferRequest request = InferRequest(testing::Rows(0, 2));
        request.set_model_version(std::to_string(first));
        v2::ModelInferResponse response;
        const grpc::StatusCode code = client.infer(request, response).error_code();
        (code == grpc::StatusCode::OK ? answered : code == grpc::StatusCode::NOT_FOUND ? not_found : failed)++;
      }
    });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (answered < 20 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));

  // A newer version: the latest 1 policy serves it in place of the first, whose running
  // requests are answered; then its requests are refused and it is freed.
  testing::TrainAndExport(trained.estimator, 40, testing::RegressionServingInput,
                          ExportOptions().model(testing::RegressionIdentity()));
  REQUIRE(server.model()->reload());
  CHECK(server.model()->find(first) == nullptr);
  while (not_found == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  for (auto& client : clients) client.join();
  CHECK(failed == 0);
  CHECK(answered >= 20);
  CHECK(not_found > 0);
  CHECK(first_loaded.expired());
  CHECK(server.model()->stats().unloads == 1);

  // A new config adds a model and drops the first without a restart.
  const std::weak_ptr<ServedModel> dropped = server.model();
  CHECK(server.reconfigure({ModelConfig().name("renamed").base_path(trained.base())}));
  CHECK(server.model_names() == std::vector<std::string>{"renamed"});
  CHECK(dropped.expired());
  const Client client(server.port());
  v2::ModelInferResponse response;
  CHECK(client.infer(InferRequest(testing::Rows(0, 2), "renamed"), response).ok());
  CHECK(client.infer(InferRequest(testing::Rows(0, 2), "regression"), response).error_code() ==
        grpc::StatusCode::NOT_FOUND);
  // One that does not load is named, and what is served stays.
  CHECK_THROWS_WITH(server.reconfigure({ModelConfig().name("renamed").base_path(trained.base()),
                                        ModelConfig().name("missing").base_path(trained.base() + "/none")}),
                    Catch::Contains("model 'missing'"));
  CHECK(client.infer(InferRequest(testing::Rows(0, 2), "renamed"), response).ok());
}

}  // namespace model_server_test
