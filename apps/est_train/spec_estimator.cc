#include "apps/est_train/spec_estimator.h"

#include <ATen/ATen.h>


#include "apps/common/number_checks.h"
#include "common/error.h"
#include "estimator/canned/canned_estimators.h"
#include "estimator/feature_columns/parsing_plan.h"
#include "estimator/canned/regression_head.h"
#include "estimator/schedules/schedule_text.h"

namespace est_train {
namespace canned = est::canned;
namespace fc = est::feature_columns;

namespace {

constexpr double kMaxRate = 1e6;

using Activation = std::function<at::Tensor(const at::Tensor&)>;

// tf.nn's activation by its name (TensorFlow takes the function; JSON holds its name).
Activation ActivationOf(const SpecValue& value) {
  const std::string name =
      value.choice({"relu", "relu6", "elu", "selu", "gelu", "tanh", "sigmoid", "softplus", "leaky_relu", "swish"});
  if (name == "relu") return [](const at::Tensor& x) { return at::relu(x); };
  if (name == "relu6") return [](const at::Tensor& x) { return at::clamp(x, 0, 6); };
  if (name == "elu") return [](const at::Tensor& x) { return at::elu(x); };
  if (name == "selu") return [](const at::Tensor& x) { return at::selu(x); };
  if (name == "gelu") return [](const at::Tensor& x) { return at::gelu(x); };
  if (name == "tanh") return [](const at::Tensor& x) { return at::tanh(x); };
  if (name == "sigmoid") return [](const at::Tensor& x) { return at::sigmoid(x); };
  if (name == "softplus") return [](const at::Tensor& x) { return at::softplus(x); };
  if (name == "leaky_relu") return [](const at::Tensor& x) { return at::leaky_relu(x, 0.2); };  // tf.nn's alpha
  return [](const at::Tensor& x) { return at::silu(x); };
}

// "Ftrl", or {"name": "Ftrl", "learning_rate": 0.1, ...Keras' Ftrl parameters}; a learning rate
// may be a schedule, as Python writes it: "CosineDecay(initial_learning_rate=0.1, decay_steps=1000)".
canned::OptimizerSpec OptimizerOf(const SpecValue& value) {
  const std::vector<std::string> names{"Adagrad", "Adam", "Ftrl", "RMSProp", "SGD"};
  if (value.json().is_string()) return canned::OptimizerSpec(value.choice(names));
  value.expect_object({"name", "learning_rate", "clipnorm", "global_clipnorm", "learning_rate_power",
                       "initial_accumulator_value", "l1_regularization_strength", "l2_regularization_strength",
                       "l2_shrinkage_regularization_strength", "beta"});
  canned::OptimizerSpec spec(value.at("name").choice(names));
  if (value.has("learning_rate") && value.at("learning_rate").json().is_string()) {
    const SpecValue text = value.at("learning_rate");
    try {
      EST_CHECK(!est::schedules::ScheduleTakesInitialRate(text.string()), est::ConfigError,
                "the schedule needs its initial rate here (initial_learning_rate=..., Constant's learning_rate=...)");
      spec.learning_rate_schedule = est::schedules::ParseLearningRateSchedule(text.string(), 0.0);
    } catch (const est::ConfigError& error) {
      text.fail(error.what());
    }
  } else if (value.has("learning_rate")) {
    spec.learning_rate = value.at("learning_rate").number(0, kMaxRate, true);
  }
  if (value.has("clipnorm")) spec.clipnorm = value.at("clipnorm").number(0, kMaxRate, true);
  if (value.has("global_clipnorm")) spec.global_clipnorm = value.at("global_clipnorm").number(0, kMaxRate, true);
  if (spec.clipnorm && spec.global_clipnorm) value.fail("has clipnorm and global_clipnorm; Keras takes one of them");
  const std::vector<std::string> ftrl_keys{"learning_rate_power", "initial_accumulator_value",
                                           "l1_regularization_strength", "l2_regularization_strength",
                                           "l2_shrinkage_regularization_strength", "beta"};
  for (const std::string& key : ftrl_keys) {
    if (!value.has(key)) continue;
    if (spec.name != "Ftrl") value.at(key).fail("a parameter of Ftrl, not of " + spec.name);
    const SpecValue number = value.at(key);
    if (key == "learning_rate_power") spec.ftrl.learning_rate_power(number.number(-kMaxRate, 0));
    if (key == "initial_accumulator_value") spec.ftrl.initial_accumulator_value(number.number(0, kMaxRate));
    if (key == "l1_regularization_strength") spec.ftrl.l1(number.number(0, kMaxRate));
    if (key == "l2_regularization_strength") spec.ftrl.l2(number.number(0, kMaxRate));
    if (key == "l2_shrinkage_regularization_strength") spec.ftrl.l2_shrinkage(number.number(0, kMaxRate));
    if (key == "beta") spec.ftrl.beta(number.number(0, kMaxRate));
  }
  return spec;
}

fc::Combiner CombinerOf(const SpecValue& value) {
  return fc::CombinerNamed(value.choice({"sum", "mean", "sqrtn"}), value.path());
}

// What every canned estimator takes, from the spec.
struct Common {
  bool classifier = true;
  int64_t n_classes = 2;
  int64_t label_dimension = 1;
  std::string label;
  std::string weight_column;
  canned::LossReduction loss_reduction = canned::LossReduction::kSumOverBatchSize;
};

template <typename Options>
Options WithCommon(Options options, const Common& common) {
  return options.n_classes(common.n_classes)
      .label_dimension(common.label_dimension)
      .weight_column(common.weight_column)
      .loss_reduction(common.loss_reduction);
}

template <typename Estimator, typename Options>
EstimatorFactory FactoryOf(Options options, est::WarmStartSettings warm_start) {
  return [options, warm_start](const std::string& model_dir, est::RunConfig config) {
    return std::make_shared<Estimator>(options, model_dir, std::move(config), warm_start);
  };
}

}  // namespace

const std::vector<std::string>& SpecInputKeys() {
  static const std::vector<std::string> keys{"estimator", "columns", "label", "train", "eval", "warm_start_from"};
  return keys;
}

SpecEstimator ReadSpecEstimator(const SpecValue& spec, const SpecColumns& columns, est::WarmStartSettings warm_start) {
  const std::vector<std::string> names{"LinearClassifier",   "LinearRegressor",
                                       "DNNClassifier",      "DNNRegressor",
                                       "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
                                       "BaselineClassifier", "BaselineRegressor"};
  SpecEstimator estimator;
  estimator.name = spec.at("estimator").choice(names);
  const std::string& name = estimator.name;
  Common common;
  common.classifier = name.size() > 10 && name.compare(name.size() - 10, 10, "Classifier") == 0;
  std::vector<std::string> parameters{"weight_column", "loss_reduction",
                                      common.classifier ? "n_classes" : "label_dimension"};
  if (common.classifier) parameters.push_back("label_vocabulary");
  const bool linear = name.rfind("Linear", 0) == 0;
  const bool dnn = name.rfind("DNNClassifier", 0) == 0 || name.rfind("DNNRegressor", 0) == 0;
  const bool combined = name.rfind("DNNLinearCombined", 0) == 0;
  if (linear) parameters.insert(parameters.end(), {"feature_columns", "optimizer", "sparse_combiner"});
  if (dnn)
    parameters.insert(parameters.end(),
                      {"feature_columns", "hidden_units", "optimizer", "activation_fn", "dropout", "batch_norm"});
  if (combined)
    parameters.insert(parameters.end(), {"linear_feature_columns", "linear_optimizer", "linear_sparse_combiner",
                                         "dnn_feature_columns", "dnn_optimizer", "dnn_hidden_units",
                                         "dnn_activation_fn", "dnn_dropout", "batch_norm"});
  if (!linear && !dnn && !combined) parameters.push_back("optimizer");
  std::vector<std::string> keys = SpecInputKeys();
  keys.insert(keys.end(), parameters.begin(), parameters.end());
  try {
    spec.expect_object(keys);
  } catch (const est::ConfigError& error) {
    throw est::ConfigError(std::string(error.what()) + " (the parameters of " + name + " and est-train's keys)");
  }

  common.label = spec.at("label").string();
  if (common.classifier && spec.has("n_classes"))
    common.n_classes = spec.at("n_classes").integer(2, est_apps::kMaxInt64);
  if (spec.has("label_vocabulary")) {
    // TensorFlow's rule: as many names as classes (n_classes, 2 unless given).
    estimator.class_labels = spec.at("label_vocabulary").strings(2);
    if (estimator.class_labels.size() != static_cast<size_t>(common.n_classes))
      spec.at("label_vocabulary")
          .fail(est::Concat("names ", estimator.class_labels.size(), " classes; expected n_classes (",
                            common.n_classes, ") of them"));
  }
  if (!common.classifier && spec.has("label_dimension"))
    common.label_dimension = spec.at("label_dimension").integer(1, est_apps::kMaxInt64);
  if (spec.has("weight_column")) common.weight_column = spec.at("weight_column").string();
  if (spec.has("loss_reduction"))
    common.loss_reduction = spec.at("loss_reduction").choice({"sum_over_batch_size", "sum"}) == "sum"
                                ? canned::LossReduction::kSum
                                : canned::LossReduction::kSumOverBatchSize;

  std::vector<fc::FeatureColumnPtr> read;  // every column the estimator reads, for parsing
  if (linear) {
    canned::LinearOptions options;
    options.feature_columns(columns.feature_columns(spec.at("feature_columns")));
    if (spec.has("optimizer")) options.optimizer(OptimizerOf(spec.at("optimizer")));
    if (spec.has("sparse_combiner")) options.sparse_combiner(CombinerOf(spec.at("sparse_combiner")));
    options = WithCommon(options, common);
    read = options.feature_columns();
    estimator.make = common.classifier ? FactoryOf<canned::LinearClassifier>(options, warm_start)
                                       : FactoryOf<canned::LinearRegressor>(options, warm_start);
  } else if (dnn) {
    canned::DNNOptions options;
    options.feature_columns(columns.dense_columns(spec.at("feature_columns")));
    options.hidden_units(spec.at("hidden_units").integers(1, est_apps::kMaxInt64));
    if (spec.has("optimizer")) options.optimizer(OptimizerOf(spec.at("optimizer")));
    if (spec.has("activation_fn")) options.activation_fn(ActivationOf(spec.at("activation_fn")));
    if (spec.has("dropout")) options.dropout(spec.at("dropout").number(0, 1, false));
    if (spec.has("batch_norm")) options.batch_norm(spec.at("batch_norm").boolean());
    options = WithCommon(options, common);
    read.assign(options.feature_columns().begin(), options.feature_columns().end());
    estimator.make = common.classifier ? FactoryOf<canned::DNNClassifier>(options, warm_start)
                                       : FactoryOf<canned::DNNRegressor>(options, warm_start);
  } else if (combined) {
    canned::DNNLinearCombinedOptions options;
    if (!spec.has("linear_feature_columns") && !spec.has("dnn_feature_columns"))
      spec.fail("needs linear_feature_columns, dnn_feature_columns or both");
    if (spec.has("linear_feature_columns"))
      options.linear_feature_columns(columns.feature_columns(spec.at("linear_feature_columns")));
    if (spec.has("linear_optimizer")) options.linear_optimizer(OptimizerOf(spec.at("linear_optimizer")));
    if (spec.has("linear_sparse_combiner"))
      options.linear_sparse_combiner(CombinerOf(spec.at("linear_sparse_combiner")));
    if (spec.has("dnn_feature_columns")) {
      options.dnn_feature_columns(columns.dense_columns(spec.at("dnn_feature_columns")));
      options.dnn_hidden_units(spec.at("dnn_hidden_units").integers(1, est_apps::kMaxInt64));
    }
    if (spec.has("dnn_optimizer")) options.dnn_optimizer(OptimizerOf(spec.at("dnn_optimizer")));
    if (spec.has("dnn_activation_fn")) options.dnn_activation_fn(ActivationOf(spec.at("dnn_activation_fn")));
    if (spec.has("dnn_dropout")) options.dnn_dropout(spec.at("dnn_dropout").number(0, 1, false));
    if (spec.has("batch_norm")) options.batch_norm(spec.at("batch_norm").boolean());
    options = WithCommon(options, common);
    read = options.linear_feature_columns();
    read.insert(read.end(), options.dnn_feature_columns().begin(), options.dnn_feature_columns().end());
    estimator.make = common.classifier ? FactoryOf<canned::DNNLinearCombinedClassifier>(options, warm_start)
                                       : FactoryOf<canned::DNNLinearCombinedRegressor>(options, warm_start);
  } else {
    canned::BaselineOptions options;
    if (spec.has("optimizer")) options.optimizer(OptimizerOf(spec.at("optimizer")));
    options = WithCommon(options, common);
    estimator.make = common.classifier ? FactoryOf<canned::BaselineClassifier>(options, warm_start)
                                       : FactoryOf<canned::BaselineRegressor>(options, warm_start);
  }

  estimator.feature_spec = fc::make_parse_example_spec(read);
  const auto head_options =
      canned::HeadOptions().weight_column(common.weight_column).loss_reduction(common.loss_reduction);
  try {
    if (!common.classifier) {
      estimator.head = std::make_shared<canned::RegressionHead>(common.label_dimension, head_options);
      estimator.example_spec =
          canned::regressor_parse_example_spec(read, common.label, common.label_dimension, common.weight_column);
    } else {
      estimator.head = canned::ClassifierHead(common.n_classes, head_options);
      estimator.example_spec =
          canned::classifier_parse_example_spec(read, common.label, common.weight_column, estimator.class_labels);
    }
  } catch (const est::ConfigError& error) {
    spec.fail(error.what());
  }
  estimator.label = common.label;
  return estimator;
}

}  // namespace est_train
