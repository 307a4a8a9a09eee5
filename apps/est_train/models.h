#pragma once
// The models est-train can train. Each is written as a TorchEstimator user writes one:
// a model_fn and an input_fn against the public API only.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/common/fashion_mnist_cnn.h"
#include "data/tfrecord.h"

#include "estimator/estimator.h"
#include "estimator/export/serving_input.h"
#include "estimator/input_fn.h"
#include "estimator/model_fn.h"

namespace est_train {

/// The version of the built-in models' code that exports record (est::ModelIdentity), which
/// est-serve expects of them.
inline constexpr const char* kModelVersion = "1";

/// A model_fn with its input_fn (train and eval), ready for train_and_evaluate.
struct ModelRecipe {
  est::ModelFn model_fn;
  est::InputFn input_fn;
  /// The learning rate model_fn trains with when params["learning_rate"] is not set.
  double default_learning_rate = 0;
  /// What a serving request holds (--export).
  est::ServingInputFn serving_input;
  /// The metrics its evaluation reports beside "loss" (what --keep-best-by and
  /// --early-stopping may name).
  std::vector<std::string> metrics;
  /// Makes the Estimator, in a model_dir with a RunConfig, of a model that is an Estimator of
  /// its own (a canned estimator, whose model_fn is its own); empty: Estimator(model_fn, ...).
  std::function<std::shared_ptr<est::Estimator>(const std::string& model_dir, est::RunConfig config)> make_estimator =
      nullptr;
  /// Exports hold the weights alone (ExporterOptions::weights_only): a model_fn the tracer cannot
  /// record, which est-serve runs with --model.
  bool export_weights_only = false;
  /// The names of its classes, which exports record (ExporterOptions::class_labels).
  std::vector<std::string> class_labels = {};
  /// Files exports hold beside the weights (ExporterOptions::assets): a canned estimator's spec.
  std::map<std::string, std::string> export_assets = {};
};

/// Where FashionMnistCnn's examples come from: TFRecord shards when train_files is set,
/// else the IDX files in data_dir.
struct FashionMnistInput {
  std::string data_dir;                  ///< the IDX files' directory
  std::vector<std::string> train_files;  ///< TFRecord shards of est_apps::FashionMnistExampleSpec
  std::vector<std::string> eval_files;   ///< the same, for evaluation
  est::data::TFRecordCompression compression = est::data::TFRecordCompression::kNone;
};

/// The Conv 32×3×3 → max-pool → dense 64 → dense 10 classifier of TensorFlow's
/// multi-worker tutorial, on Fashion-MNIST. IDX examples are sharded by element and cached;
/// TFRecord shards are sharded by file and streamed. Adam with params["learning_rate"];
/// reports accuracy. `layers`: how its layers are computed (est_apps::CnnLayers).
ModelRecipe FashionMnistCnn(const FashionMnistInput& input, int64_t batch_size, uint64_t shuffle_seed,
                            est_apps::CnnLayers layers);

/// A byte-level Transformer language model (2 causal self-attention layers of width 128, 4
/// heads, a context of 64 bytes, dropout 0.1) on the fortune files in `text_dir` (Debian's
/// fortunes package), every 20th window of text held out for validation. AdamW at
/// params["learning_rate"] with weight decay 0.1 on the weight matrices only (a second
/// optimizer for the rest), linear warmup then cosine decay over `max_steps`, gradients clipped
/// to global norm 1; reports the next byte's cross-entropy (loss, in nats) and accuracy.
/// `reads_data` false (a ps task) reads no text.
ModelRecipe TransformerLanguageModel(const std::string& text_dir, bool reads_data, int64_t batch_size,
                                     uint64_t shuffle_seed, int64_t max_steps);

/// The one-unit dense model of TensorFlow's MirroredStrategy README: learns y = 1 from
/// x = 1 with SGD at params["learning_rate"]; 100 examples an epoch.
ModelRecipe Linear(int64_t batch_size);

}  // namespace est_train
