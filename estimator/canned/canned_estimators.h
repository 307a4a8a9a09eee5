#pragma once
/// TensorFlow's canned estimators: LinearClassifier/Regressor, DNNClassifier/Regressor,
/// DNNLinearCombinedClassifier/Regressor (wide & deep) and BaselineClassifier/Regressor, with
/// TensorFlow's parameters, defaults, heads and checkpoint variable names. Each is an Estimator:
/// train, evaluate, predict, export and train_and_evaluate work as for a model_fn of one's own.
///
///   namespace fc = est::feature_columns;
///   est::canned::DNNLinearCombinedClassifier model(
///       est::canned::DNNLinearCombinedOptions()
///           .linear_feature_columns({user, category, fc::crossed_column({"category", "device"}, 1000)})
///           .dnn_feature_columns({fc::embedding_column(user, 8), fc::indicator_column(category)})
///           .dnn_hidden_units({64, 32}),
///       "/tmp/wide_deep");
///   model.train(input_fn, est::TrainOptions().max_steps(2000));
///
/// The input_fn parses records with make_parse_example_spec (or classifier_parse_example_spec) of
/// the same columns, batched by padded_batch; labels are the label feature.

#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "data/example.h"
#include "estimator/canned/head.h"
#include "estimator/canned/optimizer_spec.h"
#include "estimator/estimator.h"
#include "estimator/feature_columns/embedding_lookup.h"
#include "estimator/feature_columns/feature_column.h"

namespace est::canned {

/// LinearClassifier's and LinearRegressor's parameters, with TensorFlow's defaults.
struct LinearOptions {
  /// The columns summed (any categorical or dense column).
  TORCH_ARG(std::vector<feature_columns::FeatureColumnPtr>, feature_columns);
  /// The optimizer; by default Ftrl at 0.2.
  TORCH_ARG(OptimizerSpec, optimizer) = OptimizerSpec("Ftrl");
  /// How a categorical column's weights of one example add up.
  TORCH_ARG(feature_columns::Combiner, sparse_combiner) = feature_columns::Combiner::kSum;
  /// Classifier: the number of classes (2: a BinaryClassHead, more: a MultiClassHead).
  TORCH_ARG(int64_t, n_classes) = 2;
  /// Regressor: the number of values per example.
  TORCH_ARG(int64_t, label_dimension) = 1;
  /// The feature weighing each example's loss; empty: 1 each.
  TORCH_ARG(std::string, weight_column);
  /// How the batch's losses become the training loss.
  TORCH_ARG(LossReduction, loss_reduction) = LossReduction::kSumOverBatchSize;
};

/// DNNClassifier's and DNNRegressor's parameters, with TensorFlow's defaults.
struct DNNOptions {
  /// The dense columns the network reads.
  TORCH_ARG(std::vector<feature_columns::DenseColumnPtr>, feature_columns);
  /// The width of each hidden layer.
  TORCH_ARG(std::vector<int64_t>, hidden_units);
  /// The optimizer; by default Adagrad at 0.001.
  TORCH_ARG(OptimizerSpec, optimizer) = OptimizerSpec("Adagrad");
  /// After each hidden layer; ReLU when empty.
  TORCH_ARG(std::function<at::Tensor(const at::Tensor&)>, activation_fn);
  /// Dropout probability of the hidden layers' outputs in training.
  TORCH_ARG(std::optional<double>, dropout);
  /// Batch normalization after each hidden layer.
  TORCH_ARG(bool, batch_norm) = false;
  /// Classifier: the number of classes.
  TORCH_ARG(int64_t, n_classes) = 2;
  /// Regressor: the number of values per example.
  TORCH_ARG(int64_t, label_dimension) = 1;
  /// The feature weighing each example's loss; empty: 1 each.
  TORCH_ARG(std::string, weight_column);
  /// How the batch's losses become the training loss.
  TORCH_ARG(LossReduction, loss_reduction) = LossReduction::kSumOverBatchSize;
};

/// DNNLinearCombinedClassifier's and DNNLinearCombinedRegressor's parameters (wide & deep),
/// with TensorFlow's defaults. At least one of the two column lists.
struct DNNLinearCombinedOptions {
  /// The wide part's columns.
  TORCH_ARG(std::vector<feature_columns::FeatureColumnPtr>, linear_feature_columns);
  /// The wide part's optimizer; by default Ftrl at min(0.005, 1 / sqrt(number of linear columns)).
  TORCH_ARG(OptimizerSpec, linear_optimizer) = OptimizerSpec("Ftrl");
  /// How a categorical column's weights of one example add up.
  TORCH_ARG(feature_columns::Combiner, linear_sparse_combiner) = feature_columns::Combiner::kSum;
  /// The deep part's dense columns.
  TORCH_ARG(std::vector<feature_columns::DenseColumnPtr>, dnn_feature_columns);
  /// The deep part's optimizer; by default Adagrad at 0.001.
  TORCH_ARG(OptimizerSpec, dnn_optimizer) = OptimizerSpec("Adagrad");
  /// The width of each hidden layer.
  TORCH_ARG(std::vector<int64_t>, dnn_hidden_units);
  /// After each hidden layer; ReLU when empty.
  TORCH_ARG(std::function<at::Tensor(const at::Tensor&)>, dnn_activation_fn);
  /// Dropout probability of the hidden layers' outputs in training.
  TORCH_ARG(std::optional<double>, dnn_dropout);
  /// Batch normalization after each hidden layer.
  TORCH_ARG(bool, batch_norm) = false;
  /// Classifier: the number of classes.
  TORCH_ARG(int64_t, n_classes) = 2;
  /// Regressor: the number of values per example.
  TORCH_ARG(int64_t, label_dimension) = 1;
  /// The feature weighing each example's loss; empty: 1 each.
  TORCH_ARG(std::string, weight_column);
  /// How the batch's losses become the training loss.
  TORCH_ARG(LossReduction, loss_reduction) = LossReduction::kSumOverBatchSize;
};

/// BaselineClassifier's and BaselineRegressor's parameters: a bias alone, learning the labels'
/// prior.
struct BaselineOptions {
  /// The optimizer; by default Ftrl at 0.3.
  TORCH_ARG(OptimizerSpec, optimizer) = OptimizerSpec("Ftrl");
  /// Classifier: the number of classes.
  TORCH_ARG(int64_t, n_classes) = 2;
  /// Regressor: the number of values per example.
  TORCH_ARG(int64_t, label_dimension) = 1;
  /// The feature weighing each example's loss; empty: 1 each.
  TORCH_ARG(std::string, weight_column);
  /// How the batch's losses become the training loss.
  TORCH_ARG(LossReduction, loss_reduction) = LossReduction::kSumOverBatchSize;
};

/// tf.estimator.LinearClassifier. ConfigError (here) for options TensorFlow refuses.
class LinearClassifier : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit LinearClassifier(const LinearOptions& options, std::string model_dir = "", RunConfig config = {},
                            WarmStartSettings warm_start_from = {});
};

/// tf.estimator.LinearRegressor. ConfigError (here) for options TensorFlow refuses.
class LinearRegressor : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit LinearRegressor(const LinearOptions& options, std::string model_dir = "", RunConfig config = {},
                           WarmStartSettings warm_start_from = {});
};

/// tf.estimator.DNNClassifier. ConfigError (here) for options TensorFlow refuses.
class DNNClassifier : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit DNNClassifier(const DNNOptions& options, std::string model_dir = "", RunConfig config = {},
                         WarmStartSettings warm_start_from = {});
};

/// tf.estimator.DNNRegressor. ConfigError (here) for options TensorFlow refuses.
class DNNRegressor : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit DNNRegressor(const DNNOptions& options, std::string model_dir = "", RunConfig config = {},
                        WarmStartSettings warm_start_from = {});
};

/// tf.estimator.DNNLinearCombinedClassifier (wide & deep). ConfigError (here) for options TensorFlow refuses.
class DNNLinearCombinedClassifier : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit DNNLinearCombinedClassifier(const DNNLinearCombinedOptions& options, std::string model_dir = "", RunConfig config = {},
                                       WarmStartSettings warm_start_from = {});
};

/// tf.estimator.DNNLinearCombinedRegressor. ConfigError (here) for options TensorFlow refuses.
class DNNLinearCombinedRegressor : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit DNNLinearCombinedRegressor(const DNNLinearCombinedOptions& options, std::string model_dir = "", RunConfig config = {},
                                      WarmStartSettings warm_start_from = {});
};

/// tf.estimator.BaselineClassifier. ConfigError (here) for options TensorFlow refuses.
class BaselineClassifier : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit BaselineClassifier(const BaselineOptions& options, std::string model_dir = "", RunConfig config = {},
                              WarmStartSettings warm_start_from = {});
};

/// tf.estimator.BaselineRegressor. ConfigError (here) for options TensorFlow refuses.
class BaselineRegressor : public Estimator {
 public:
  /// The estimator in `model_dir`, as Estimator's constructor takes them.
  explicit BaselineRegressor(const BaselineOptions& options, std::string model_dir = "", RunConfig config = {},
                             WarmStartSettings warm_start_from = {});
};


/// The head of a classifier of `n_classes`, as the canned classifiers choose it: BinaryClassHead
/// for 2, MultiClassHead above; ConfigError below 2.
std::shared_ptr<const Head> ClassifierHead(int64_t n_classes, HeadOptions options = {});

/// tf.estimator.classifier_parse_example_spec: the columns' spec, the label `label_key` (int64
/// [1]) and the weight column (float32 [1]) when given. Parse with ParseExample(spec, label_key).
/// With a `label_vocabulary` (a canned classifier's: the classes' names, in order) the label is
/// a string, parsed to its index in the vocabulary: the class id the heads take. A label not in
/// it is a DataError naming it; a name listed twice a ConfigError.
data::ExampleSpec classifier_parse_example_spec(const std::vector<feature_columns::FeatureColumnPtr>& columns,
                                                const std::string& label_key, const std::string& weight_column = "",
                                                const std::vector<std::string>& label_vocabulary = {});

/// tf.estimator.regressor_parse_example_spec: the label is float32 [label_dimension].
data::ExampleSpec regressor_parse_example_spec(const std::vector<feature_columns::FeatureColumnPtr>& columns,
                                               const std::string& label_key, int64_t label_dimension = 1,
                                               const std::string& weight_column = "");

}  // namespace est::canned
