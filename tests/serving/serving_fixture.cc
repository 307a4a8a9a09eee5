// A model server for the tests that call it with other programs' clients (real_clients_test.py
// runs Triton's and TensorFlow Serving's Python clients against it). It trains ServedRegression
// briefly in DIR/model, exports it under DIR/model/export, writes what Estimator::predict answers
// for the rows the clients send, and serves the export until its stdin ends, as the model
// "served_regression"; beside it, the model "versioned" of two versions in DIR/versioned: a copy
// of that export, and one trained further, with the labels "stable" and "canary".
//
//   serving_fixture --dir DIR [--token T] [--tls] [--records]
//
// Writes, in order:
//   DIR/expected.json  {"x": [[3 floats] x 16], "y": [16 floats], "positive": [16 bools],
//                       "records": [16 strings]}: testing::Rows(0, 16), Estimator::predict's
//                      answers for them, and the rows as tf.train.Example records with float
//                      feature "x" (testing::ExampleRecords), each as its bytes' hex digits;
//                      "versioned": {"name": "versioned", "first": V1, "newest": V2, "y": [16 floats],
//                      "positive": [16 bools]}: the versions of the model "versioned" ("stable"
//                      is V1, whose answers are the ones above; "canary" is V2) and V2's answers;
//                      "base_paths": {"served_regression": PATH, "versioned": PATH};
//   DIR/server.json    {"port": N, "rest_port": M, "ca_file": PATH or ""}, atomically, once the
//                      server listens: gRPC at N, the REST API at M.
// With --token, calls must carry "authorization: Bearer T"; with --tls the server serves TLS
// with a certificate made in DIR/tls by openssl, signed by DIR/tls/ca.pem (the ca_file). With
// --records the export's serving input is testing::RegressionRecordsInput: requests carry
// serialized tf.train.Example records in input "examples" instead of "x", and the server runs
// the exports' traced programs with no code of the model's (no model_fn, no serving input).
// Exit status: 0 after stdin's end and a clean shutdown, 1 bad usage, 2 any error (printed).

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "serving/model_server.h"
#include "tests/serving/serving_models.h"
#include "tests/tls_certificates.h"

// LeakSanitizer (sanitizer builds): OpenSSL's allocations are left out of leak reports, as
// tests/test_main.cc leaves them out: gRPC can leave a cut-short TLS handshake's state (a
// client that does not trust the server) allocated at exit.
extern "C" const char* __lsan_default_suppressions() { return "leak:CRYPTO_zalloc\n"; }

namespace serving_fixture {
using namespace est;
namespace fs = std::filesystem;

/// The rows the clients send: one request of all of them, and one request per row.
constexpr int64_t kRows = 16;

/// What the command line asks for.
struct Arguments {
  std::string dir;
  std::string token;
  bool tls = false;
  bool records = false;
};

/// Parses the command line; false (after a usage line) when it is not understood.
bool ParseArguments(int argc, char** argv, Arguments& arguments) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--dir" && i + 1 < argc) {
      arguments.dir = argv[++i];
    } else if (flag == "--token" && i + 1 < argc) {
      arguments.token = argv[++i];
    } else if (flag == "--tls") {
      arguments.tls = true;
    } else if (flag == "--records") {
      arguments.records = true;
    } else {
      arguments.dir.clear();
      break;
    }
  }
  if (!arguments.dir.empty()) return true;
  std::cerr << "usage: serving_fixture --dir DIR [--token T] [--tls] [--records]\n";
  return false;
}

/// The server's TLS files in `dir`: a certificate authority (ca.pem, ca.key) and a certificate
/// it signs for 127.0.0.1 and localhost (server.pem, server.key). IoError when openssl fails.
net::TlsOptions MakeServerCertificates(const fs::path& dir) {
  fs::create_directories(dir);
  for (const auto& [name, ca] : {std::pair<std::string, std::string>{"ca", ""}, {"server", "ca"}}) {
    const std::string command = testing::CertificateCommand(dir, name, ca);
    if (std::system(command.c_str()) != 0) throw IoError("openssl could not make " + name + ".pem: " + command);
  }
  const std::string d = dir.string() + "/";
  net::TlsOptions tls;
  tls.ca_file = d + "ca.pem";
  tls.cert_file = d + "server.pem";
  tls.key_file = d + "server.key";
  return tls;
}

/// `bytes` as hex digits, two per byte.
std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : bytes) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 15]);
  }
  return hex;
}

/// Estimator::predict's answers for the rows the clients send, as expected.json holds them.
nlohmann::json ExpectedAnswers(Estimator& estimator) {
  const at::Tensor x = testing::Rows(0, kRows);
  auto input = [&](Mode, const distribute::InputContext&) {
    return data::Dataset::FromTensors({{"x", x}}).batch(kRows);
  };
  nlohmann::json expected = {{"x", nlohmann::json::array()}, {"y", nlohmann::json::array()},
                             {"positive", nlohmann::json::array()}, {"records", nlohmann::json::array()}};
  for (const std::string& record : testing::ExampleRecords(x)) expected["records"].push_back(Hex(record));
  for (int64_t row = 0; row < kRows; ++row) {
    const at::Tensor values = x[row].contiguous();
    expected["x"].push_back(std::vector<float>(values.data_ptr<float>(), values.data_ptr<float>() + 3));
  }
  for (const Prediction& prediction : estimator.predict(input)) {
    expected["y"].push_back(prediction.at("y").item<float>());
    expected["positive"].push_back(prediction.at("positive").item<bool>());
  }
  return expected;
}

/// Trains, exports and writes expected.json, then serves until stdin ends; the exit status.
int Serve(const Arguments& arguments) {
  const fs::path dir = fs::absolute(arguments.dir);
  fs::create_directories(dir);
  Estimator estimator(testing::ServedRegression, (dir / "model").string(), testing::QuietConfig());
  const ServingInputFn serving_input =
      arguments.records ? ServingInputFn(testing::RegressionRecordsInput) : ServingInputFn(testing::RegressionServingInput);
  const ExportOptions identity = ExportOptions().model(testing::RegressionIdentity());
  const fs::path first = testing::TrainAndExport(estimator, 20, serving_input, identity);
  nlohmann::json expected = ExpectedAnswers(estimator);
  // The model "versioned": a copy of that export, and a version trained further.
  fs::create_directories(dir / "versioned");
  fs::copy(first, dir / "versioned" / first.filename(), fs::copy_options::recursive);
  estimator.train(testing::RegressionInput, TrainOptions().max_steps(40));
  const fs::path newest = estimator.export_saved_model((dir / "versioned").string(), serving_input, identity);
  const nlohmann::json newer = ExpectedAnswers(estimator);
  const int64_t first_version = std::stoll(first.filename().string());
  const int64_t newest_version = std::stoll(newest.filename().string());
  expected["versioned"] = {{"name", "versioned"}, {"first", first_version}, {"newest", newest_version},
                           {"y", newer["y"]}, {"positive", newer["positive"]}};
  expected["base_paths"] = {{testing::RegressionIdentity().name, (dir / "model" / "export").string()},
                            {"versioned", (dir / "versioned").string()}};
  WriteFileAtomic((dir / "expected.json").string(), expected.dump(2) + "\n");

  // Tensors: model_fn runs, with its serving input. Records: the exports run as they stand, by
  // their traced programs, parsing records by the features the exports record.
  serving::PredictorOptions predictor = serving::PredictorOptions().model(testing::RegressionIdentity());
  if (!arguments.records) predictor.serving_input_fn(serving_input);
  serving::ModelServerOptions options = serving::ModelServerOptions().host("127.0.0.1").port(0).rest_port(0).model(
      serving::ServedModelOptions().predictor(predictor));
  options.token(arguments.token);
  if (arguments.tls) options.tls(MakeServerCertificates(dir / "tls"));
  serving::ModelServer server(
      arguments.records ? nullptr : ModelFn(testing::ServedRegression),
      {serving::ModelConfig().name(testing::RegressionIdentity().name).base_path((dir / "model" / "export").string()),
       serving::ModelConfig()
           .name("versioned")
           .base_path((dir / "versioned").string())
           .version_policy(serving::VersionPolicy::All())
           .version_labels({{"stable", first_version}, {"canary", newest_version}})},
      options);
  const nlohmann::json listening = {
      {"port", server.port()}, {"rest_port", server.rest_port()}, {"ca_file", options.tls().ca_file}};
  WriteFileAtomic((dir / "server.json").string(), listening.dump() + "\n");

  // Serves until whoever started this program closes its stdin (or exits).
  std::cin.ignore(std::numeric_limits<std::streamsize>::max());
  server.shutdown();
  server.wait();
  return 0;
}

}  // namespace serving_fixture

int main(int argc, char** argv) {
  serving_fixture::Arguments arguments;
  if (!serving_fixture::ParseArguments(argc, argv, arguments)) return 1;
  try {
    return serving_fixture::Serve(arguments);
  } catch (const std::exception& error) {
    std::cerr << "serving_fixture: " << error.what() << "\n";
    return 2;
  }
}
