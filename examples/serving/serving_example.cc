// A model of your own, served by the stock est-serve: a model_fn est-serve was not built with
// (a classifier of three Gaussian blobs in 4 dimensions: dense → batch norm → relu → dropout →
// dense), trained with train_and_evaluate, exported by a FinalExporter with its traced program
// and that program as an ONNX model, and checked: the program, loaded as est-serve loads it,
// answers what Estimator::predict does.
//
//   est-serving-example MODEL_DIR
//
// Writes MODEL_DIR/export/final/<version>/ (export.json, variables.pt, model.pt, model.onnx) and
// MODEL_DIR/requests.json: 8 example rows ("features") with Estimator::predict's answers
// ("class", "probabilities"), for a client to compare with what a server answers. Then:
//
//   est-serve --model_base_path MODEL_DIR/export/final --rest_api_port 8501
//   curl -X POST localhost:8501/v1/models/blobs_classifier:predict -d '{"instances": [[0.1, 2, -1, 0.5]]}'
//   python3 -c 'import torch; print(torch.jit.load("MODEL_DIR/export/final/<version>/model.pt")(torch.zeros(1, 4)))'
//   python3 -c 'import numpy, onnxruntime as ort
//   model = ort.InferenceSession("MODEL_DIR/export/final/<version>/model.onnx")
//   print(model.run(None, {"features": numpy.zeros((1, 4), numpy.float32)}))'

#include <torch/torch.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "estimator/estimator.h"
#include "estimator/exporter.h"
#include "estimator/metrics/accuracy.h"
#include "estimator/train_and_evaluate.h"
#include "serving/predictor.h"

namespace {

constexpr int64_t kFeatures = 4;
constexpr int64_t kClasses = 3;

/// The classifier's layers.
struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : hidden(register_module("hidden", torch::nn::Linear(kFeatures, 32))),
        norm(register_module("norm", torch::nn::BatchNorm1d(32))),
        dropout(register_module("dropout", torch::nn::Dropout(0.1))),
        logits(register_module("logits", torch::nn::Linear(32, kClasses))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return logits(dropout(torch::relu(norm(hidden(x)))));
  }

  torch::nn::Linear hidden{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear logits{nullptr};
};
TORCH_MODULE(Classifier);

est::EstimatorSpec model_fn(const est::Features& features, const torch::Tensor& labels, est::Mode mode,
                            est::ModelContext& ctx) {
  auto net = ctx.module("classifier", [] { return Classifier(); });
  const torch::Tensor logits = net->forward(features.at("features"));
  const torch::Tensor classes = logits.argmax(1);
  if (mode == est::Mode::kPredict)
    return est::EstimatorSpec::Predict({{"class", classes}, {"probabilities", logits.softmax(1)}});
  const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, labels);
  if (mode == est::Mode::kEval)
    return est::EstimatorSpec::Eval(loss, {{"accuracy", est::metrics::Accuracy(labels, classes)}});
  auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(net->parameters(), 1e-2); });
  return est::EstimatorSpec::Train(loss, adam);
}

/// 3000 points of three blobs (class c centred at 3·e_c), the same every run.
est::data::Dataset input_fn(est::Mode mode, const est::distribute::InputContext& input) {
  torch::manual_seed(mode == est::Mode::kTrain ? 1 : 2);
  const torch::Tensor labels = torch::randint(0, kClasses, {3000});
  const torch::Tensor centres = 3 * torch::eye(kFeatures).narrow(0, 0, kClasses);
  const torch::Tensor points = centres.index_select(0, labels) + torch::randn({3000, kFeatures});
  auto dataset = est::data::Dataset::FromTensors({{"features", points}}, labels)
                     .shard(input.num_input_pipelines(), input.input_pipeline_id());
  if (mode == est::Mode::kTrain) dataset = dataset.shuffle(3000, /*seed=*/1).repeat();
  return dataset.batch(input.per_replica_batch_size(64));
}

/// A request holds a batch of feature rows.
est::ServingInputReceiver serving_input() { return {{{"features", torch::kFloat32, {-1, kFeatures}}}, nullptr}; }

}  // namespace

int main(int argc, char** argv) try {
  const std::string model_dir = argc > 1 ? argv[1] : "/tmp/est-serving-example";
  est::Estimator estimator(model_fn, model_dir);
  const auto exporter = est::FinalExporter(
      "final", est::ExporterOptions(serving_input).model({"blobs_classifier", "1"}).onnx(17));
  auto result = est::train_and_evaluate(estimator, est::TrainSpec(input_fn).max_steps(400),
                                        est::EvalSpec(input_fn).steps(std::nullopt).throttle_secs(0).exporters({exporter}));
  if (!result.evaluated() || result.export_results.empty()) return 0;  // a training task of a cluster
  std::printf("accuracy = %.4f; exported %s\n", result["accuracy"], result.export_results.front().c_str());

  // Rows a client sends, and what Estimator::predict answers for them.
  torch::manual_seed(3);
  const torch::Tensor rows = 2 * torch::randn({8, kFeatures});
  nlohmann::json requests = {{"features", nlohmann::json::array()}, {"class", nlohmann::json::array()},
                             {"probabilities", nlohmann::json::array()}};
  for (int64_t i = 0; i < rows.size(0); ++i) {
    const torch::Tensor row = rows[i].contiguous();
    requests["features"].push_back(std::vector<float>(row.data_ptr<float>(), row.data_ptr<float>() + kFeatures));
  }
  auto one_batch = [&](est::Mode, const est::distribute::InputContext&) {
    return est::data::Dataset::FromTensors({{"features", rows}}).batch(rows.size(0));
  };
  std::vector<torch::Tensor> classes, probabilities;
  for (const est::Prediction& prediction : estimator.predict(one_batch)) {
    classes.push_back(prediction.at("class"));
    probabilities.push_back(prediction.at("probabilities"));
    requests["class"].push_back(prediction.at("class").item<int64_t>());
    const torch::Tensor p = prediction.at("probabilities").contiguous();
    requests["probabilities"].push_back(std::vector<float>(p.data_ptr<float>(), p.data_ptr<float>() + kClasses));
  }
  std::ofstream(model_dir + "/requests.json") << requests.dump(2) << "\n";

  // The traced program, as est-serve runs it without this file's code, answers the same.
  const est::serving::Predictor program(result.export_results.front());
  const est::TensorMap served = program.predict({{"features", rows}});
  const double difference = (served.at("probabilities") - torch::stack(probabilities)).abs().max().item<double>();
  const bool same_classes = torch::equal(served.at("class"), torch::stack(classes));
  std::printf("the traced program's answers: classes %s, probabilities within %.2g of Estimator::predict's\n",
              same_classes ? "the same" : "DIFFERENT", difference);
  return result["accuracy"] > 0.9 && same_classes && difference <= 1e-6 ? 0 : 1;
} catch (const est::Error& error) {
  std::fprintf(stderr, "error: %s\n", error.what());
  return 2;
}
