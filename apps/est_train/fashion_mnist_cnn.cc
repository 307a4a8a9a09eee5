// The Fashion-MNIST CNN of TensorFlow's "Multi-worker training with Estimator" tutorial.

#include <torch/torch.h>

#include "apps/common/fashion_mnist_cnn.h"
#include "apps/est_train/models.h"
#include "data/mnist.h"
#include "estimator/estimator_spec.h"
#include "estimator/metrics/accuracy.h"
#include "estimator/model_context.h"

namespace est_train {
namespace {

constexpr double kCnnLearningRate = 1e-3;  // Adam's, without --learning-rate

est::EstimatorSpec CnnModelFn(est_apps::CnnLayers layers, const est::Features& features, const torch::Tensor& labels, est::Mode mode,
                           est::ModelContext& ctx) {
  auto net = ctx.module("cnn", [layers] { return est_apps::FashionMnistCnn(layers); });
  auto logits = net->forward(features.at("image"));
  auto classes = logits.argmax(1);
  if (mode == est::Mode::kPredict)
    return est::EstimatorSpec::Predict({{"logits", logits}, {"class", classes}, {"probabilities", logits.softmax(1)}});
  auto loss = torch::nn::functional::cross_entropy(logits, labels);
  if (mode == est::Mode::kEval)
    return est::EstimatorSpec::Eval(loss, {{"accuracy", est::metrics::Accuracy(labels, classes)}});
  const double learning_rate = ctx.params().value("learning_rate", kCnnLearningRate);
  auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(net->parameters(), learning_rate); });
  return est::EstimatorSpec::Train(loss, adam);
}

}  // namespace

ModelRecipe FashionMnistCnn(const FashionMnistInput& data, int64_t batch_size, uint64_t shuffle_seed,
                            est_apps::CnnLayers layers) {
  auto input_fn = [=](est::Mode mode, const est::distribute::InputContext& input) {
    const bool training = mode == est::Mode::kTrain;
    est_apps::FashionMnistPipelineOptions options;
    options.training = training;
    options.batch_size = input.per_replica_batch_size(batch_size);
    options.shuffle_seed = shuffle_seed;
    options.num_parallel_calls = est::data::kAutotune;  // input_pipeline_bench: closest to pre-built batches
    if (!data.train_files.empty()) {
      // Streamed: sharded by file, read by threads, not cached.
      options.cache = false;
      return est_apps::FashionMnistPipeline(
          est_apps::FashionMnistRecords(training ? data.train_files : data.eval_files, data.compression,
                                        input.num_input_pipelines(), input.input_pipeline_id(), est::data::kAutotune),
          options);
    }
    // The files are read first: a missing data set is reported before a bad batch size.
    auto source = est::data::FashionMnist(data.data_dir, training ? "train" : "t10k");
    options.num_shards = input.num_input_pipelines();
    options.shard_index = input.input_pipeline_id();
    return est_apps::FashionMnistPipeline(source, options);
  };
  auto model_fn = [layers](const est::Features& features, const torch::Tensor& labels, est::Mode mode,
                           est::ModelContext& ctx) { return CnnModelFn(layers, features, labels, mode, ctx); };
  auto serving_input = [] { return est::ServingInputReceiver{{{"image", torch::kFloat32, {-1, 1, 28, 28}}}, nullptr}; };
  return ModelRecipe{model_fn, input_fn, kCnnLearningRate, serving_input, {"accuracy"}};
}

}  // namespace est_train
