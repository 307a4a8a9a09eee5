// est::serving::Predictor: the predictions of an export equal Estimator::predict's; exports of
// another model, signature or variables are refused, naming the difference; bad requests get a
// RequestError naming the input; concurrent callers get the same answers.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <future>
#include <vector>

#include "data/example/example.pb.h"
#include "estimator/export/export_directory.h"
#include "serving/predictor.h"
#include "tests/serving/serving_models.h"

namespace predictor_test {
using namespace est;
using serving::Predictor;
using serving::PredictorOptions;
using serving::RequestError;
namespace fs = std::filesystem;

namespace {

// The message of the CheckpointError `make` throws ("" when it throws none).
std::string RefusalOf(const std::function<void()>& make) { return testing::ErrorMessageOf<CheckpointError>(make); }

}  // namespace

TEST_CASE("a Predictor's predictions equal Estimator::predict's", "[serving][predictor]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("predictor_equal").string(),
                      testing::QuietConfig());
  testing::TrainAndExport(estimator, 20, testing::RegressionServingInput,
                          ExportOptions().model(testing::RegressionIdentity()));
  const std::string base = estimator.model_dir() + "/export";

  const Predictor predictor(testing::ServedRegression, base,
                            PredictorOptions().model(testing::RegressionIdentity()));
  CHECK(predictor.manifest().global_step == 20);
  const at::Tensor x = testing::Rows(0, 10);
  const TensorMap served = predictor.predict({{"x", x}});
  REQUIRE(served.size() == 2);

  auto input = [&](Mode, const distribute::InputContext&) { return data::Dataset::FromTensors({{"x", x}}).batch(10); };
  int64_t row = 0;
  for (const Prediction& prediction : estimator.predict(input)) {
    INFO("example " << row);
    CHECK(torch::equal(prediction.at("y"), served.at("y")[row]));
    CHECK(torch::equal(prediction.at("positive"), served.at("positive")[row]));
    ++row;
  }
  CHECK(row == 10);
  // One example at a time answers the same.
  CHECK(torch::equal(predictor.predict({{"x", testing::Rows(3, 1)}}).at("y"), served.at("y").narrow(0, 3, 1)));
}

TEST_CASE("a Predictor takes the newest version of a base directory, or the version it is given",
          "[serving][predictor]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("predictor_versions").string(),
                      testing::QuietConfig());
  const std::string base = estimator.model_dir() + "/export";
  const std::string first = testing::TrainAndExport(estimator, 5);
  const std::string second = testing::TrainAndExport(estimator, 10);
  CHECK(Predictor(testing::ServedRegression, base).path() == second);
  CHECK(Predictor(testing::ServedRegression, base).manifest().global_step == 10);
  const Predictor older(testing::ServedRegression, first);
  CHECK(older.manifest().global_step == 5);
  CHECK(older.version() == std::stoll(fs::path(first).filename().string()));
  CHECK_THAT(RefusalOf([&] { Predictor(testing::ServedRegression, estimator.model_dir() + "/nothing"); }),
             Catch::Contains("no export at") && Catch::Contains("nothing"));
}

TEST_CASE("a Predictor refuses an export of another model, signature or variables, naming the difference",
          "[serving][predictor]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("predictor_refusals").string(),
                      testing::QuietConfig());
  const std::string path = testing::TrainAndExport(estimator, 2, testing::RegressionServingInput,
                                                   ExportOptions().model(testing::RegressionIdentity()));
  SECTION("another model's identity") {
    CHECK_THAT(RefusalOf([&] {
                 Predictor(testing::ServedRegression, path, PredictorOptions().model({"served_regression", "2"}));
               }),
               Catch::Contains("of model 'served_regression' version '1'; expected model 'served_regression' "
                               "version '2'"));
  }
  SECTION("another serving input") {
    auto wider = [] { return ServingInputReceiver{{{"x", at::kFloat, {-1, 4}}}, nullptr}; };
    CHECK_THAT(RefusalOf([&] { Predictor(testing::ServedRegression, path, PredictorOptions().serving_input_fn(wider)); }),
               Catch::Contains("input x: float32 [-1, 4] here, x: float32 [-1, 3] in the export"));
  }
  SECTION("a model_fn whose predictions changed") {
    ModelFn renamed = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
      EstimatorSpec spec = testing::ServedRegression(features, labels, mode, ctx);
      spec.predictions["score"] = spec.predictions.at("y");
      return spec;
    };
    CHECK_THAT(RefusalOf([&] { Predictor(renamed, path); }),
               Catch::Contains("output 'score' is from model_fn but not in the export"));
  }
  SECTION("a model_fn with a variable the export lacks") {
    ModelFn bigger = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
      EstimatorSpec spec = testing::ServedRegression(features, labels, mode, ctx);
      at::Tensor& scale = ctx.buffer("scale", [] { return torch::ones({1}); });
      spec.predictions["y"] = spec.predictions.at("y") * scale;
      return spec;
    };
    CHECK_THAT(RefusalOf([&] { Predictor(bigger, path); }),
               Catch::Contains("model_fn creates variable 'scale', which the export"));
  }
  SECTION("a model_fn that leaves a variable of the export unused") {
    ModelFn smaller = [](const Features& features, const at::Tensor&, Mode, ModelContext& ctx) {
      auto first = ctx.module("net", [] {
        return torch::nn::Sequential(torch::nn::Linear(3, 16), torch::nn::ReLU(), torch::nn::Linear(16, 1));
      });
      auto y = first->forward(features.at("x")).squeeze(1);
      return EstimatorSpec::Predict({{"y", y}, {"positive", y.gt(0)}});
    };
    // The same variables made another way: accepted. Only the first layer's: refused.
    CHECK(RefusalOf([&] { Predictor(smaller, path); }).empty());
    ModelFn first_layer = [](const Features& features, const at::Tensor&, Mode, ModelContext& ctx) {
      auto net = ctx.module("net", [] { return torch::nn::Sequential(torch::nn::Linear(3, 16)); });
      auto y = net->forward(features.at("x")).sum(1);
      return EstimatorSpec::Predict({{"y", y}, {"positive", y.gt(0)}});
    };
    CHECK_THAT(RefusalOf([&] { Predictor(first_layer, path); }),
               Catch::Contains("holds variable 'net/2.bias', which model_fn does not create"));
  }
}

TEST_CASE("a bad request gets a RequestError naming the input and what was expected", "[serving][predictor]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("predictor_requests").string(),
                      testing::QuietConfig());
  const Predictor predictor(testing::ServedRegression, testing::TrainAndExport(estimator, 2));
  auto refusal = [&](const Features& request) {
    return testing::ErrorMessageOf<RequestError>([&] { predictor.predict(request); });
  };
  CHECK_THAT(refusal({}), Catch::Contains("the request lacks input 'x: float32 [-1, 3]'"));
  CHECK_THAT(refusal({{"x", testing::Rows(0, 2)}, {"z", testing::Rows(0, 2)}}),
             Catch::Contains("input 'z', which the model does not take; it takes 'x'"));
  CHECK_THAT(refusal({{"x", testing::Rows(0, 2).to(torch::kDouble)}}),
             Catch::Contains("input 'x' has dtype float64; expected float32"));
  CHECK_THAT(refusal({{"x", torch::zeros({2, 4})}}),
             Catch::Contains("input 'x' has shape [2, 4]; expected [-1, 3]"));
  CHECK_THAT(refusal({{"x", torch::zeros({3})}}), Catch::Contains("input 'x' has shape [3]; expected [-1, 3]"));
  CHECK_THAT(refusal({{"x", torch::zeros({2, 3}, torch::kComplexFloat)}}),
             Catch::Contains("input 'x' has dtype ComplexFloat; expected float32"));
  // The Predictor still answers.
  CHECK(predictor.predict({{"x", testing::Rows(0, 2)}}).at("y").size(0) == 2);
}

TEST_CASE("a serving input receiver maps requests to features; inputs of one request share the batch size",
          "[serving][predictor]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("predictor_receiver").string(),
                      testing::QuietConfig());
  // Requests carry "a" (2 columns) and "b" (1 column), in float64; model_fn takes "x".
  ServingInputFn split = [] {
    ServingInputReceiver receiver;
    receiver.inputs = {{"a", at::kDouble, {-1, 2}}, {"b", at::kDouble, {-1, 1}}};
    receiver.receiver = [](const Features& request) {
      return Features{{"x", torch::cat({request.at("a"), request.at("b")}, 1).to(torch::kFloat)}};
    };
    return receiver;
  };
  const Predictor predictor(testing::ServedRegression, testing::TrainAndExport(estimator, 2, split),
                            PredictorOptions().serving_input_fn(split));
  const at::Tensor x = testing::Rows(5, 4);
  const TensorMap answer = predictor.predict(
      {{"a", x.narrow(1, 0, 2).to(torch::kDouble)}, {"b", x.narrow(1, 2, 1).to(torch::kDouble)}});
  const Predictor direct(testing::ServedRegression, testing::TrainAndExport(estimator, 2));
  CHECK(torch::equal(answer.at("y"), direct.predict({{"x", x}}).at("y")));
  CHECK_THAT(testing::ErrorMessageOf<RequestError>([&] {
               predictor.predict({{"a", torch::zeros({2, 2}, torch::kDouble)}, {"b", torch::zeros({3, 1}, torch::kDouble)}});
             }),
             Catch::Contains("input 'b' has 3 rows but input 'a' has 2"));
}

TEST_CASE("a Predictor of serialized tf.Example records parses them into the tensors model_fn takes",
          "[serving][predictor][records]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("predictor_records").string(),
                      testing::QuietConfig());
  const std::string path = testing::TrainAndExport(estimator, 5, testing::RegressionRecordsInput);
  const Predictor predictor(testing::ServedRegression, path,
                            PredictorOptions().serving_input_fn(testing::RegressionRecordsInput));
  CHECK(predictor.records_input() == "examples");
  CHECK((predictor.manifest().inputs == std::vector<TensorSpec>{{"x", at::kFloat, {-1, 3}}}));
  const at::Tensor x = testing::Rows(3, 6);
  const Features parsed = predictor.parse_records(testing::ExampleRecords(x));
  CHECK(torch::equal(parsed.at("x"), x));
  const Predictor direct(testing::ServedRegression, testing::TrainAndExport(estimator, 5));
  CHECK(torch::equal(predictor.predict(parsed).at("y"), direct.predict({{"x", x}}).at("y")));
  CHECK(predictor.parse_records({}).at("x").sizes() == at::IntArrayRef({0, 3}));

  auto refusal = [&](const std::vector<std::string>& records) {
    return testing::ErrorMessageOf<RequestError>([&] { predictor.parse_records(records); });
  };
  CHECK_THAT(refusal({testing::ExampleRecord({1, 2, 3}), testing::ExampleRecord({1, 2})}),
             Catch::Contains("record 1 of input 'examples'") && Catch::Contains("'x'"));
  CHECK_THAT(refusal({"\xff\xff"}), Catch::Contains("record 0 of input 'examples'"));
  CHECK_THAT(testing::ErrorMessageOf<RequestError>([&] { direct.parse_records({}); }),
             Catch::Contains("the model takes tensors ('x'), not serialized records"));

  // Without the serving input the records are parsed as the export records their features;
  // another serving input is refused.
  const Predictor without(testing::ServedRegression, path);
  const std::vector<std::string> records = testing::ExampleRecords(testing::Rows(0, 4));
  CHECK(torch::equal(without.predict(without.parse_records(records)).at("y"),
                     predictor.predict(predictor.parse_records(records)).at("y")));
  CHECK_THAT(RefusalOf([&] {
               Predictor(testing::ServedRegression, path,
                         PredictorOptions().serving_input_fn(testing::RegressionServingInput));
             }),
             Catch::Contains("requests carry tensors here but serialized records in input 'examples' in the export"));
}

TEST_CASE("ParsingServingInputFn pads VarLen features as padded_batch does, and needs a bytes feature's tensor",
          "[serving][predictor][records]") {
  using data::FeatureSpec;
  using data::FeatureType;
  // "t": VarLen int64s, padded; "w": a FixedLen float; "s": strings to two ids each, padded.
  const data::BytesToIds two_ids = [](std::string_view value, int64_t* ids) {
    ids[0] = static_cast<int64_t>(value.size());
    ids[1] = value.empty() ? -1 : value[0];
  };
  const ServingInputReceiver varying = ParsingServingInputFn(
      {{"t", FeatureSpec::VarLen(FeatureType::kInt64)},
       {"w", FeatureSpec::FixedLen(FeatureType::kFloat32, {1})},
       {"s", FeatureSpec::VarLen(FeatureType::kBytes).ids_decoder(two_ids, 2)}})();
  CHECK((varying.inputs == std::vector<TensorSpec>{{"s", at::kLong, {-1, -1, 2}},
                                                   {"s_length", at::kLong, {-1}},
                                                   {"t", at::kLong, {-1, -1}},
                                                   {"t_length", at::kLong, {-1}},
                                                   {"w", at::kFloat, {-1, 1}}}));
  CHECK(varying.record_features.empty());  // ids decoders are code: a server needs this serving input
  auto record = [](std::vector<int64_t> t, float w, std::vector<std::string> s) {
    tfexample::Example example;
    auto& features = *example.mutable_features()->mutable_feature();
    for (int64_t value : t) features["t"].mutable_int64_list()->add_value(value);
    features["w"].mutable_float_list()->add_value(w);
    for (const std::string& value : s) features["s"].mutable_bytes_list()->add_value(value);
    return example.SerializeAsString();
  };
  const Features parsed = varying.parse_records({record({7}, 0.5F, {"ab"}), record({1, 2, 3}, 1.5F, {}),
                                                 record({}, 2.5F, {"x", "yz"})});
  CHECK(torch::equal(parsed.at("t"), torch::tensor({7, 0, 0, 1, 2, 3, 0, 0, 0}, torch::kLong).view({3, 3})));
  CHECK(torch::equal(parsed.at("t_length"), torch::tensor({1, 3, 0}, torch::kLong)));
  CHECK(torch::equal(parsed.at("w"), torch::tensor({0.5F, 1.5F, 2.5F}).view({3, 1})));
  CHECK(torch::equal(parsed.at("s"), torch::tensor({2, 'a', 0, 0, 0, 0, 0, 0, 1, 'x', 2, 'y'}, torch::kLong).view({3, 2, 2})));
  CHECK(torch::equal(parsed.at("s_length"), torch::tensor({1, 0, 2}, torch::kLong)));
  CHECK(varying.parse_records({record({4, 5}, 1.0F, {})}).at("t").sizes() == at::IntArrayRef({1, 2}));

  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([] { ParsingServingInputFn({{"image", FeatureSpec::FixedLen(FeatureType::kBytes)}}); }),
             Catch::Contains("bytes feature 'image' needs its tensor in bytes_features"));
  // A bytes feature decoded: its tensor as given.
  const ServingInputReceiver receiver =
      ParsingServingInputFn({{"image", FeatureSpec::FixedLen(FeatureType::kBytes).decoder(data::DecodeRaw(at::kByte, {2, 2}))}},
                            ParsingServingInputOptions().input_name("images").bytes_features({{"image", at::kByte, {-1, 2, 2}}}))();
  CHECK(receiver.records_input == "images");
  CHECK((receiver.inputs == std::vector<TensorSpec>{{"image", at::kByte, {-1, 2, 2}}}));
}

TEST_CASE("concurrent callers of one Predictor get the answers of one caller", "[serving][predictor]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("predictor_threads").string(),
                      testing::QuietConfig());
  const Predictor predictor(testing::ServedRegression, testing::TrainAndExport(estimator, 2));
  std::vector<at::Tensor> expected;
  for (int64_t t = 0; t < 4; ++t) expected.push_back(predictor.predict({{"x", testing::Rows(t * 8, 8)}}).at("y"));
  std::vector<std::future<bool>> callers;
  for (int64_t t = 0; t < 4; ++t)
    callers.push_back(std::async(std::launch::async, [&, t] {
      bool same = true;
      for (int i = 0; i < 50; ++i) same = same && torch::equal(predictor.predict({{"x", testing::Rows(t * 8, 8)}}).at("y"), expected[t]);
      return same;
    }));
  for (auto& caller : callers) CHECK(caller.get());
}

}  // namespace predictor_test
