// est-train --model canned as a user runs it: the example spec of examples/canned/ trains wide &
// deep on click-through data made here, with no C++ and no TensorFlow, to an AUC a wrong model
// cannot reach (from TFRecord or CSV files alike), into a checkpoint with TensorFlow's variable names, in one process and across
// est-launch's workers and parameter servers; est-serve serves its export to tf.Example requests;
// flags that do not apply to a canned estimator are refused.

#include <catch2/catch.hpp>
#include <grpcpp/create_channel.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_reader.h"
#include "common/file_util.h"
#include "data/example/example.pb.h"
#include "data/tfrecord.h"
#include "estimator/export/export_directory.h"
#include "serving/proto/prediction_service.grpc.pb.h"
#include "tests/apps/est_serve_process.h"
#include "tests/apps/run_command.h"
#include "tests/http_exchange.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kCannedCategories[] = {"apparel", "books", "cameras", "dating", "finance", "games",
                                             "health",  "music", "pets",    "sports", "toys",    "travel"};
constexpr const char* kCannedDevices[] = {"mobile", "desktop", "tablet"};

// Writes `rows` click-through examples with the features of examples/canned/wide_deep.json, clicks
// drawn from a logistic rule of category, category x device, age and hour (users are noise): as
// tf.train.Example records at PATH.tfrecord and as the rows of PATH.csv.
void WriteCannedClicks(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> category_of(0, 11);
  std::uniform_int_distribution<int> device_of(0, 2);
  std::uniform_int_distribution<int> hour_of(0, 23);
  std::uniform_int_distribution<int> user_of(0, 199);
  std::uniform_real_distribution<double> age_of(16, 80);
  std::uniform_real_distribution<double> price_of(0.5, 8);
  std::uniform_real_distribution<double> unit(0, 1);
  est::data::TFRecordWriter writer(path + ".tfrecord");
  std::ofstream csv(path + ".csv");
  csv << "user,category,device,hour,age,price,clicked,outcome\n";
  for (int i = 0; i < rows; ++i) {
    const int category = category_of(random);
    const int device = device_of(random);
    const int hour = hour_of(random);
    const double age = age_of(random);
    const double price = price_of(random);
    const double logit = -1.0 + 1.5 * std::sin(category * 1.7) + ((category + device) % 3 == 0 ? 1.2 : -0.6) +
                         (age < 30 && device == 0 ? 1.5 : 0.0) + (hour >= 18 ? 0.7 : 0.0) - 0.15 * price;
    const bool clicked = unit(random) < 1 / (1 + std::exp(-logit));
    est::tfexample::Example example;
    auto& features = *example.mutable_features()->mutable_feature();
    features["user"].mutable_bytes_list()->add_value("u" + std::to_string(user_of(random)));
    features["category"].mutable_bytes_list()->add_value(kCannedCategories[category]);
    features["device"].mutable_bytes_list()->add_value(kCannedDevices[device]);
    features["hour"].mutable_int64_list()->add_value(hour);
    features["age"].mutable_float_list()->add_value(static_cast<float>(age));
    features["price"].mutable_float_list()->add_value(static_cast<float>(price));
    features["clicked"].mutable_int64_list()->add_value(clicked ? 1 : 0);
    features["outcome"].mutable_bytes_list()->add_value(clicked ? "click" : "skip");  // the label as a class name
    writer.write(example.SerializeAsString());
    char numbers[64];  // floats written so that they read back as the same float32
    std::snprintf(numbers, sizeof numbers, "%.9g,%.9g", static_cast<double>(static_cast<float>(age)),
                  static_cast<double>(static_cast<float>(price)));
    csv << features["user"].bytes_list().value(0) << "," << kCannedCategories[category] << "," << kCannedDevices[device]
        << "," << hour << "," << numbers << "," << (clicked ? 1 : 0) << "," << (clicked ? "click" : "skip") << "\n";
  }
  writer.close();
}

// The example spec beside its data: DIR/wide_deep.json, DIR/data/train-0000{0,1}.tfrecord and
// DIR/data/eval.tfrecord, and the same rows in DIR/data/train-0000{0,1}.csv and DIR/data/eval.csv.
fs::path CannedExampleDir(const std::string& name) {
  const fs::path dir = est::testing::FreshTempDir(name);
  fs::create_directories(dir / "data");
  fs::copy_file(CANNED_EXAMPLE_SPEC, dir / "wide_deep.json");
  WriteCannedClicks((dir / "data" / "train-00000").string(), 8000, 1);
  WriteCannedClicks((dir / "data" / "train-00001").string(), 8000, 2);
  WriteCannedClicks((dir / "data" / "eval").string(), 4000, 3);
  return dir;
}

est::testing::RunResult RunCannedEstTrain(const fs::path& dir, const std::string& args) {
  return est::testing::RunCommand(std::string(EST_TRAIN_PATH) + " --model canned --spec " +
                                  (dir / "wide_deep.json").string() + " --model-dir " + (dir / "model").string() +
                                  " " + args);
}

// The last evaluation's value of `metric` in est-train's output; -1 when there is none.
double CannedEvalMetric(const std::string& output, const std::string& metric) {
  const std::regex line("Saving dict for global step \\d+: (?:.*, )?" + metric + " = ([0-9.e+-]+)");
  double value = -1;
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it)
    value = std::stod((*it)[1].str());
  return value;
}

}  // namespace

TEST_CASE("est-train --model canned trains the example spec's wide & deep to a good AUC", "[apps][canned]") {
  const fs::path dir = CannedExampleDir("est_train_canned");
  const auto run = RunCannedEstTrain(dir, "--max-steps 150 --save-checkpoints-steps 150");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  // 0.815 here; a model of the label's prior alone has 0.5, one of the wrong features (user) about that.
  CHECK(CannedEvalMetric(run.output, "auc") > 0.75);
  CHECK(CannedEvalMetric(run.output, "accuracy") > CannedEvalMetric(run.output, "accuracy_baseline"));
  for (const char* metric : {"auc_precision_recall", "precision", "recall", "label/mean", "prediction/mean",
                             "average_loss", "loss"})
    CHECK(CannedEvalMetric(run.output, metric) >= 0);
  // TensorFlow's variable names, so that tf.train.load_checkpoint finds what it expects.
  const est::checkpoint::CheckpointReader reader((dir / "model" / "model.ckpt-150").string());
  for (const char* name : {"linear/linear_model/category_X_device/weights", "linear/linear_model/bias_weights",
                           "linear/linear_model/age_bucketized/weights", "dnn/hiddenlayer_0/kernel",
                           "dnn/hiddenlayer_1/bias", "dnn/logits/kernel",
                           "dnn/input_from_feature_columns/input_layer/user_embedding/embedding_weights"}) {
    INFO(name);
    CHECK(reader.has_tensor(name));
  }

  // The same rows as CSV files ("format": "csv") train the same model: the same evaluation.
  nlohmann::json csv_spec = nlohmann::json::parse(est::ReadFile((dir / "wide_deep.json").string()));
  csv_spec["train"]["files"] = {"data/train*.csv"};
  csv_spec["train"]["format"] = "csv";
  csv_spec["eval"] = {{"files", "data/eval.csv"}, {"format", "csv"}};
  std::ofstream(dir / "csv.json") << csv_spec.dump(2);
  const auto csv_run = est::testing::RunCommand(std::string(EST_TRAIN_PATH) + " --model canned --spec " +
                                                (dir / "csv.json").string() + " --model-dir " +
                                                (dir / "csv_model").string() + " --max-steps 150 --save-checkpoints-steps 150");
  INFO(csv_run.output);
  REQUIRE(csv_run.exit_code == 0);
  const std::regex evaluation("Saving dict for global step 150: [^\\n]*");
  std::smatch from_records;
  std::smatch from_csv;
  REQUIRE(std::regex_search(run.output, from_records, evaluation));
  REQUIRE(std::regex_search(csv_run.output, from_csv, evaluation));
  CHECK(from_csv.str() == from_records.str());
}

namespace {

// The first `count` records of `file`.
std::vector<std::string> FirstRecords(const fs::path& file, size_t count) {
  est::data::TFRecordReader reader(file.string());
  std::vector<std::string> records;
  for (std::string record; records.size() < count && reader.next(&record);) records.push_back(record);
  return records;
}

// A tf.train.Example as TensorFlow Serving's REST API takes one: strings, whole numbers (int64s)
// and numbers with a fraction (floats).
nlohmann::json ExampleJson(const std::string& record) {
  est::tfexample::Example example;
  REQUIRE(example.ParseFromString(record));
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [name, feature] : example.features().feature()) {
    if (feature.has_bytes_list()) json[name] = feature.bytes_list().value(0);
    if (feature.has_int64_list()) json[name] = feature.int64_list().value(0);
    if (feature.has_float_list()) json[name] = static_cast<double>(feature.float_list().value(0));
  }
  return json;
}

// The examples' label ("clicked").
std::vector<int> Clicks(const std::vector<std::string>& records) {
  std::vector<int> clicks;
  for (const std::string& record : records) {
    est::tfexample::Example example;
    REQUIRE(example.ParseFromString(record));
    clicks.push_back(static_cast<int>(example.features().feature().at("clicked").int64_list().value(0)));
  }
  return clicks;
}

// The area under the ROC curve of `scores` for `labels`: the chance that a positive scores above
// a negative (ties count half).
double ExactAuc(const std::vector<float>& scores, const std::vector<int>& labels) {
  double above = 0;
  double pairs = 0;
  for (size_t p = 0; p < scores.size(); ++p) {
    if (labels[p] != 1) continue;
    for (size_t n = 0; n < scores.size(); ++n) {
      if (labels[n] != 0) continue;
      above += scores[p] > scores[n] ? 1.0 : scores[p] == scores[n] ? 0.5 : 0.0;
      pairs += 1;
    }
  }
  return above / pairs;
}

}  // namespace

TEST_CASE("est-serve serves est-train's canned export: tf.Example requests to Classify and Predict",
          "[apps][canned][serving]") {
  const fs::path dir = CannedExampleDir("est_serve_canned");
  // The example spec with its label as class names ("outcome": "skip" or "click") and the devices
  // in a vocabulary file.
  nlohmann::json spec = nlohmann::json::parse(est::ReadFile((dir / "wide_deep.json").string()));
  spec["label"] = "outcome";
  spec["label_vocabulary"] = {"skip", "click"};
  spec["columns"]["device"] = {{"categorical_column_with_vocabulary_file",
                                {{"key", "device"}, {"vocabulary_file", "devices.txt"}}}};
  std::ofstream(dir / "devices.txt") << "mobile\ndesktop\ntablet\n";
  std::ofstream(dir / "wide_deep.json") << spec.dump(2);
  const auto run = RunCannedEstTrain(dir, "--max-steps 150 --save-checkpoints-steps 150 --export final");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string base = (dir / "model" / "export" / "final").string();
  // The export holds what serving needs: without the spec and its vocabulary, est-serve builds the
  // model from the spec the export's assets hold.
  fs::remove(dir / "wide_deep.json");
  fs::remove(dir / "devices.txt");
  const auto server = est::testing::StartEstServe(
      {"--model", "canned", "--export-dir", base, "--port", "0", "--port-file", (dir / "port").string(),
       "--rest_api_port", "0", "--rest-port-file", (dir / "rest_port").string()},
      dir);
  est::testing::WaitUntilListening(server, dir);

  // TensorFlow Serving's REST Classify, examples as its documentation writes them.
  const std::vector<std::string> records = FirstRecords(dir / "data" / "eval.tfrecord", 400);
  nlohmann::json examples = nlohmann::json::array();
  for (const std::string& record : records) examples.push_back(ExampleJson(record));
  const auto rest_port = static_cast<uint16_t>(std::stoi(est::ReadFile((dir / "rest_port").string())));
  const est::testing::HttpAnswer classified = est::testing::HttpExchange(
      rest_port, "POST", "/v1/models/canned:classify", nlohmann::json{{"examples", examples}}.dump());
  INFO(classified.body.substr(0, 2000));
  REQUIRE(classified.status == 200);
  const nlohmann::json results = nlohmann::json::parse(classified.body).at("results");
  REQUIRE(results.size() == records.size());
  std::vector<float> scores;
  for (const nlohmann::json& result : results) {
    REQUIRE(result.size() == 2);
    CHECK(result[0][0] == "skip");  // the classes by the label vocabulary's names
    CHECK(result[1][0] == "click");
    CHECK(result[0][1].get<float>() + result[1][1].get<float>() == Approx(1.0).margin(1e-6));
    scores.push_back(result[1][1].get<float>());
  }
  // Held-out examples ranked as the trained model's evaluation ranks them.
  CHECK(ExactAuc(scores, Clicks(records)) > 0.75);
  CHECK(CannedEvalMetric(run.output, "auc") > 0.75);

  // TensorFlow Serving's Predict over gRPC, the serialized records as TensorFlow's client sends
  // them: the same probabilities, bit for bit.
  const std::string port = est::ReadFile((dir / "port").string());
  auto channel = grpc::CreateChannel("127.0.0.1:" + port.substr(0, port.find('\n')), grpc::InsecureChannelCredentials());
  est::serving::tf::PredictRequest predict;
  predict.mutable_model_spec()->set_name("canned");
  auto& input = (*predict.mutable_inputs())["examples"];
  input.set_dtype(est::serving::tf::DT_STRING);
  input.mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(records.size()));
  for (const std::string& record : records) input.add_string_val(record);
  predict.add_output_filter("probabilities");
  est::serving::tf::PredictResponse predicted;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  const grpc::Status status =
      tensorflow::serving::PredictionService::NewStub(channel)->Predict(&context, predict, &predicted);
  INFO(status.error_message());
  REQUIRE(status.ok());
  const std::string& content = predicted.outputs().at("probabilities").tensor_content();
  REQUIRE(content.size() == records.size() * 2 * sizeof(float));
  std::vector<float> probabilities(records.size() * 2);
  std::memcpy(probabilities.data(), content.data(), content.size());
  for (size_t i = 0; i < records.size(); ++i) CHECK(probabilities[2 * i + 1] == scores[i]);

  // A record that is not a tf.Example is refused naming it.
  input.set_string_val(1, "\x0a\xff");
  input.mutable_tensor_shape()->mutable_dim(0)->set_size(2);
  while (input.string_val_size() > 2) input.mutable_string_val()->RemoveLast();
  grpc::ClientContext bad_context;
  const grpc::Status refused =
      tensorflow::serving::PredictionService::NewStub(channel)->Predict(&bad_context, predict, &predicted);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(refused.error_message(), Catch::Contains("record 1 of input 'examples'"));

  ::kill(server.pid, SIGTERM);
  CHECK(est::testing::WaitForEstServe(server) == 0);
  CHECK_THAT(est::ReadFile(server.err.string()), Catch::Contains("running model_fn"));

  // An asset that is not what the export's manifest records is refused, naming it.
  const fs::path asset = fs::path(est::ExportVersionPath(base, est::ExportVersions(base).back())) / "assets" /
                         "canned_spec.json";
  std::ofstream(asset, std::ios::app) << " ";
  const auto corrupt = est::testing::RunCommand(std::string(EST_SERVE_PATH) + " --model canned --export-dir " + base);
  CHECK(corrupt.exit_code == 1);
  CHECK_THAT(corrupt.output, Catch::Contains("canned_spec.json"));
}

TEST_CASE("est-train --model canned refuses flags whose part the spec gives", "[apps][canned]") {
  const fs::path dir = CannedExampleDir("est_train_canned_flags");
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--learning-rate 0.1", "--learning-rate does not apply to --model canned"},
           {"--lr-schedule 'CosineDecay(decay_steps=10)'", "--lr-schedule does not apply to --model canned"},
           {"--clip-norm 1", "--clip-norm does not apply to --model canned"},
           {"--data-files x", "--data-files does not apply to --model canned"},
           {"--batch-size 32", "--batch-size 32 and the spec's train.batch_size 256 both give the batch size"}}) {
    INFO(args);
    const auto run = RunCannedEstTrain(dir, args);
    CHECK(run.exit_code == 1);
    CHECK(est::testing::Contains(run.output, "est-train: error: " + expected));
  }
  const auto no_spec = est::testing::RunCommand(std::string(EST_TRAIN_PATH) + " --model canned --model-dir " +
                                                (dir / "model").string());
  CHECK(est::testing::Contains(no_spec.output, "est-train: error: --model canned needs --spec"));
  const auto spec_elsewhere = est::testing::RunCommand(std::string(EST_TRAIN_PATH) + " --model linear --spec " +
                                                       (dir / "wide_deep.json").string() + " --model-dir " +
                                                       (dir / "model").string());
  CHECK(est::testing::Contains(spec_elsewhere.output, "est-train: error: --spec applies to --model canned"));
}

TEST_CASE("est-train --model canned trains across workers and parameter servers, as the other models do",
          "[apps][canned]") {
  const fs::path dir = CannedExampleDir("est_train_canned_cluster");
  for (const std::string& cluster : {std::string("--workers 2 --evaluator -- ") + EST_TRAIN_PATH +
                                         " --strategy multi_worker",
                                     std::string("--workers 2 --ps 1 --evaluator -- ") + EST_TRAIN_PATH +
                                         " --strategy parameter_server"}) {
    INFO(cluster);
    fs::remove_all(dir / "model");
    const auto run = est::testing::RunCommand(std::string(EST_LAUNCH_PATH) + " " + cluster +
                                              " --model canned --spec " + (dir / "wide_deep.json").string() +
                                              " --model-dir " + (dir / "model").string() +
                                              " --max-steps 150 --save-checkpoints-steps 150");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    // The evaluator task's evaluation of the last checkpoint.
    CHECK(CannedEvalMetric(run.output, "auc") > 0.75);
  }
}
