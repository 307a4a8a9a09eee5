// est-serve as a user runs it: it serves what est-train exported, over both protocols (gRPC, and
// REST with --rest-port), until SIGTERM, by the export's traced program (no model code) or with a
// built-in model_fn; it refuses an export of another model with one clear line.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <grpcpp/create_channel.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "apps/est_train/models.h"
#include "common/file_util.h"
#include "serving/predictor.h"
#include "serving/proto/grpc_inference_service.grpc.pb.h"
#include "serving/proto/prediction_service.grpc.pb.h"
#include "tests/apps/est_serve_process.h"
#include "tests/apps/run_command.h"
#include "tests/http_exchange.h"
#include "tests/test_util.h"

namespace est_serve_test {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TEST_CASE("est-serve serves est-train's export over both protocols until SIGTERM", "[apps][serving]") {
  // The stock binary runs the export's program, or, given --model, the built-in model_fn.
  const bool program = GENERATE(true, false);
  INFO((program ? "the traced program" : "--model linear"));
  const fs::path dir = est::testing::FreshTempDir(program ? "est_serve_program" : "est_serve_model_fn");
  const std::string model_dir = (dir / "model").string();
  const RunResult trained = RunCommand(std::string(EST_TRAIN_PATH) + " --model linear --model-dir " + model_dir +
                                       " --max-steps 30 --log-step-count-steps 100 --export final");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const std::string base = model_dir + "/export/final";
  std::ofstream(dir / "token") << "s3cret\n";

  std::vector<std::string> args{program ? "--model_base_path" : "--export-dir", base, "--port", "0", "--port-file",
                                 (dir / "port").string(), "--token-file", (dir / "token").string(),
                                 "--max-queue-delay-us", "500", "--instances", "2", "--rest_api_port", "0",
                                 "--rest-port-file", (dir / "rest_port").string()};
  if (!program) args.insert(args.end(), {"--model", "linear"});
  const est::testing::EstServe server = est::testing::StartEstServe(args, dir);
  est::testing::WaitUntilListening(server, dir);
  const std::string port = est::ReadFile((dir / "port").string());
  auto channel = grpc::CreateChannel("127.0.0.1:" + port.substr(0, port.find('\n')), grpc::InsecureChannelCredentials());
  auto context = [] {
    auto made = std::make_unique<grpc::ClientContext>();
    made->AddMetadata("authorization", "Bearer s3cret");
    made->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return made;
  };

  // What est::serving::Predictor answers for x = 1, 2, 3 (est-train's linear model, trained toward y = 1).
  const at::Tensor x = torch::tensor({1.f, 2.f, 3.f}).view({3, 1});
  const est::serving::Predictor predictor(est_train::Linear(1).model_fn, base);
  const at::Tensor expected = predictor.predict({{"x", x}}).at("logits");

  est::serving::v2::ModelInferRequest request;
  request.set_model_name("linear");
  auto* input = request.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(3);
  input->add_shape(1);
  request.add_raw_input_contents(std::string(static_cast<const char*>(x.data_ptr()), 12));
  est::serving::v2::ModelInferResponse response;
  const grpc::Status inferred = inference::GRPCInferenceService::NewStub(channel)->ModelInfer(context().get(), request,
                                                                                             &response);
  REQUIRE(inferred.ok());
  REQUIRE(response.raw_output_contents_size() == 1);
  at::Tensor logits = torch::empty({3});
  REQUIRE(response.raw_output_contents(0).size() == 12);
  std::memcpy(logits.data_ptr(), response.raw_output_contents(0).data(), 12);
  CHECK(torch::allclose(logits, expected, 1e-6, 1e-6));
  CHECK(std::abs(logits[0].item<float>() - 1.f) < 0.2);  // trained toward y = 1 at x = 1

  est::serving::tf::PredictRequest predict;
  predict.mutable_model_spec()->set_name("linear");
  auto& proto = (*predict.mutable_inputs())["x"];
  proto.set_dtype(est::serving::tf::DT_FLOAT);
  proto.mutable_tensor_shape()->add_dim()->set_size(1);
  proto.mutable_tensor_shape()->add_dim()->set_size(1);
  proto.add_float_val(1.f);
  est::serving::tf::PredictResponse predicted;
  REQUIRE(tensorflow::serving::PredictionService::NewStub(channel)->Predict(context().get(), predict, &predicted).ok());
  const std::string& content = predicted.outputs().at("logits").tensor_content();
  REQUIRE(content.size() == 4);
  float one = 0;
  std::memcpy(&one, content.data(), 4);
  CHECK(one == expected[0].item<float>());

  // TensorFlow Serving's REST API on the REST port, with the token.
  REQUIRE(fs::exists(dir / "rest_port"));
  const auto rest_port = static_cast<uint16_t>(std::stoi(est::ReadFile((dir / "rest_port").string())));
  const est::testing::HttpAnswer rest = est::testing::HttpExchange(
      rest_port, "POST", "/v1/models/linear:predict", R"({"instances": [[1.0], [2.0], [3.0]]})",
      "Authorization: Bearer s3cret\r\n");
  INFO(rest.body);
  REQUIRE(rest.status == 200);
  const nlohmann::json rest_predictions = nlohmann::json::parse(rest.body).at("predictions");
  REQUIRE(rest_predictions.size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(rest_predictions[i].get<float>() == expected[i].item<float>());

  ::kill(server.pid, SIGTERM);
  CHECK(est::testing::WaitForEstServe(server) == 0);
  const std::string log = est::ReadFile(server.err.string());
  CHECK_THAT(log, Catch::Contains("SIGTERM: stopping"));
  CHECK_THAT(log, Catch::Contains(program ? "running its traced program" : "running model_fn"));
}

TEST_CASE("est-serve refuses an export of another model, and a bad flag, with one clear line", "[apps][serving]") {
  const fs::path dir = est::testing::FreshTempDir("est_serve_other_model");
  const std::string model_dir = (dir / "model").string();
  REQUIRE(RunCommand(std::string(EST_TRAIN_PATH) + " --model linear --model-dir " + model_dir +
                     " --max-steps 5 --log-step-count-steps 100 --export final")
              .exit_code == 0);
  const RunResult other = RunCommand(std::string(EST_SERVE_PATH) + " --model fashion_mnist_cnn --port 0 --export-dir " +
                                     model_dir + "/export/final");
  CHECK(other.exit_code == 1);
  CHECK_THAT(other.output, Catch::StartsWith("est-serve: error: no version under '" + model_dir +
                                             "/export/final' that version policy latest 1 names loads (version ") &&
                               Catch::Contains("is of model 'linear' version '1'; expected model 'fashion_mnist_cnn'"));
  const RunResult missing = RunCommand(std::string(EST_SERVE_PATH) + " --export-dir " + (dir / "none").string());
  CHECK(missing.exit_code != 0);
  CHECK_THAT(missing.output, Catch::Contains("--export-dir") && Catch::Contains("none"));
  const RunResult no_instances =
      RunCommand(std::string(EST_SERVE_PATH) + " --instances 0 --export-dir " + model_dir + "/export/final");
  CHECK(no_instances.exit_code != 0);
  CHECK_THAT(no_instances.output, Catch::Contains("--instances") && Catch::Contains("from 1 to 256, got '0'"));
  const RunResult nothing = RunCommand(std::string(EST_SERVE_PATH) + " --port 0");
  CHECK(nothing.exit_code == 1);
  CHECK_THAT(nothing.output, Catch::Contains("say what to serve: --export-dir (--model_base_path), "
                                             "--model_config_file or --model-repository"));
  std::ofstream(dir / "models.config") << "model_config_list { config { name: 'a' base_path: 'model/export/final' } }";
  const RunResult both = RunCommand(std::string(EST_SERVE_PATH) + " --export-dir " + model_dir +
                                    "/export/final --model_config_file " + (dir / "models.config").string());
  CHECK(both.exit_code != 0);
  CHECK_THAT(both.output, Catch::Contains("--export-dir") && Catch::Contains("excludes"));
}

TEST_CASE("est-serve serves the models of a model config file, and the file changed without a restart",
          "[apps][serving]") {
  const fs::path dir = est::testing::FreshTempDir("est_serve_config");
  const std::string model_dir = (dir / "model").string();
  const RunResult trained = RunCommand(std::string(EST_TRAIN_PATH) + " --model linear --model-dir " + model_dir +
                                       " --max-steps 30 --log-step-count-steps 100 --export final");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const std::string base = model_dir + "/export/final";
  std::string version;
  for (const auto& entry : fs::directory_iterator(base)) version = entry.path().filename().string();
  // TensorFlow Serving's text format, a relative base path and an absolute one.
  auto config = [&](const std::string& second) {
    return "model_config_list {\n"
           "  config {\n    name: 'first'\n    base_path: 'model/export/final'\n"
           "    version_labels { key: 'stable' value: " + version + " }\n  }\n"
           "  config {\n    name: '" + second + "'\n    base_path: '" + base + "'\n"
           "    model_version_policy { all {} }\n  }\n}\n";
  };
  const std::string config_file = (dir / "models.config").string();
  est::WriteFileAtomic(config_file, config("second"));
  const est::testing::EstServe server = est::testing::StartEstServe({"--model_config_file", config_file, "--model_config_file_poll_wait_seconds", "1",
                               "--port", "0", "--port-file", (dir / "port").string(), "--rest_api_port", "0",
                               "--rest-port-file", (dir / "rest_port").string()},
                              dir);
  est::testing::WaitUntilListening(server, dir);
  REQUIRE(fs::exists(dir / "rest_port"));
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  const auto rest_port = static_cast<uint16_t>(std::stoi(est::ReadFile((dir / "rest_port").string())));
  auto status_of = [&](const std::string& method, const std::string& path, const std::string& body = "") {
    return est::testing::HttpExchange(rest_port, method, path, body).status;
  };
  const std::string instances = R"({"instances": [[1.0], [2.0]]})";
  CHECK(status_of("GET", "/v1/models/first") == 200);
  CHECK(status_of("POST", "/v1/models/first/labels/stable:predict", instances) == 200);
  CHECK(status_of("POST", "/v1/models/first/labels/canary:predict", instances) == 400);
  CHECK(status_of("POST", "/v2/models/second/versions/" + version + "/infer",
                  R"({"inputs": [{"name": "x", "shape": [2, 1], "datatype": "FP32", "data": [1, 2]}]})") == 200);
  CHECK(status_of("GET", "/v1/models/third") == 404);

  // The file changed: "third" in place of "second", without a restart.
  est::WriteFileAtomic(config_file, config("third"));
  while (status_of("GET", "/v1/models/third") != 200 && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(status_of("GET", "/v1/models/third") == 200);
  CHECK(status_of("GET", "/v1/models/second") == 404);
  CHECK(status_of("GET", "/v1/models/first") == 200);

  // A file that does not parse: logged, and what is served stays.
  est::WriteFileAtomic(config_file, "model_config_list { config { name: 'x' ");
  while (est::ReadFile(server.err.string()).find("the models served stay as they were") == std::string::npos &&
         Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(status_of("GET", "/v1/models/third") == 200);

  ::kill(server.pid, SIGTERM);
  CHECK(est::testing::WaitForEstServe(server) == 0);
  const std::string log = est::ReadFile(server.err.string());
  CHECK_THAT(log, Catch::Contains("model config file '" + config_file + "'") && Catch::Contains("line 1"));
  CHECK_THAT(log, Catch::Contains("model 'second' is no longer served"));
}

}  // namespace est_serve_test
