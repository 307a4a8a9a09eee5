#include "estimator/canned/canned_estimators.h"

#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/error.h"
#include "estimator/canned/binary_class_head.h"
#include "estimator/canned/canned_model.h"
#include "estimator/canned/multi_class_head.h"
#include "estimator/canned/regression_head.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::canned {
namespace {

// TensorFlow 2.15's default learning rates (tensorflow_estimator's canned/*.py).
constexpr double kLinearLearningRate = 0.2;
constexpr double kDnnLearningRate = 0.001;
constexpr double kCombinedLinearLearningRate = 0.005;
constexpr double kBaselineLearningRate = 0.3;

template <typename Options>
HeadOptions HeadOptionsOf(const Options& options) {
  return HeadOptions().weight_column(options.weight_column()).loss_reduction(options.loss_reduction());
}

template <typename Options>
std::shared_ptr<const Head> RegressorHead(const Options& options) {
  return std::make_shared<RegressionHead>(options.label_dimension(), HeadOptionsOf(options));
}

template <typename Options>
std::shared_ptr<const Head> ClassifierHeadOf(const Options& options) {
  return ClassifierHead(options.n_classes(), HeadOptionsOf(options));
}

detail::LinearPart LinearPartOf(const LinearOptions& options) {
  return {options.feature_columns(), options.sparse_combiner(), options.optimizer(), kLinearLearningRate};
}

detail::DnnPart DnnPartOf(const DNNOptions& options) {
  return {options.feature_columns(),
          DnnNetworkOptions()
              .hidden_units(options.hidden_units())
              .activation(options.activation_fn())
              .dropout(options.dropout())
              .batch_norm(options.batch_norm()),
          options.optimizer(), kDnnLearningRate};
}

detail::CannedModel CombinedModel(const DNNLinearCombinedOptions& options, std::shared_ptr<const Head> head) {
  EST_CHECK(!options.linear_feature_columns().empty() || !options.dnn_feature_columns().empty(), ConfigError,
            "DNNLinearCombined: linear_feature_columns and dnn_feature_columns are both empty");
  detail::CannedModel model{std::move(head), {}, {}, {}};
  if (!options.linear_feature_columns().empty()) {
    const double columns = static_cast<double>(options.linear_feature_columns().size());
    model.linear = detail::LinearPart{options.linear_feature_columns(), options.linear_sparse_combiner(),
                                      options.linear_optimizer(),
                                      std::min(kCombinedLinearLearningRate, 1.0 / std::sqrt(columns))};
  }
  if (!options.dnn_feature_columns().empty()) {
    model.dnn = DnnPartOf(DNNOptions()
                              .feature_columns(options.dnn_feature_columns())
                              .hidden_units(options.dnn_hidden_units())
                              .activation_fn(options.dnn_activation_fn())
                              .dropout(options.dnn_dropout())
                              .batch_norm(options.batch_norm())
                              .optimizer(options.dnn_optimizer()));
  }
  return model;
}

detail::CannedModel BaselineModel(const BaselineOptions& options, std::shared_ptr<const Head> head) {
  return {std::move(head), {}, {}, detail::BaselinePart{options.optimizer(), kBaselineLearningRate}};
}

}  // namespace

LinearClassifier::LinearClassifier(const LinearOptions& options, std::string model_dir, RunConfig config,
                                   WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn({ClassifierHeadOf(options), LinearPartOf(options), {}, {}}),
                std::move(model_dir), std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

LinearRegressor::LinearRegressor(const LinearOptions& options, std::string model_dir, RunConfig config,
                                 WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn({RegressorHead(options), LinearPartOf(options), {}, {}}),
                std::move(model_dir), std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

DNNClassifier::DNNClassifier(const DNNOptions& options, std::string model_dir, RunConfig config,
                             WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn({ClassifierHeadOf(options), {}, DnnPartOf(options), {}}), std::move(model_dir),
                std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

DNNRegressor::DNNRegressor(const DNNOptions& options, std::string model_dir, RunConfig config,
                           WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn({RegressorHead(options), {}, DnnPartOf(options), {}}), std::move(model_dir),
                std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

DNNLinearCombinedClassifier::DNNLinearCombinedClassifier(const DNNLinearCombinedOptions& options,
                                                         std::string model_dir, RunConfig config,
                                                         WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn(CombinedModel(options, ClassifierHeadOf(options))), std::move(model_dir),
                std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

DNNLinearCombinedRegressor::DNNLinearCombinedRegressor(const DNNLinearCombinedOptions& options,
                                                       std::string model_dir, RunConfig config,
                                                       WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn(CombinedModel(options, RegressorHead(options))), std::move(model_dir),
                std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

BaselineClassifier::BaselineClassifier(const BaselineOptions& options, std::string model_dir, RunConfig config,
                                       WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn(BaselineModel(options, ClassifierHeadOf(options))), std::move(model_dir),
                std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

BaselineRegressor::BaselineRegressor(const BaselineOptions& options, std::string model_dir, RunConfig config,
                                     WarmStartSettings warm_start_from)
    : Estimator(detail::CannedModelFn(BaselineModel(options, RegressorHead(options))), std::move(model_dir),
                std::move(config), nlohmann::json::object(), std::move(warm_start_from)) {}

std::shared_ptr<const Head> ClassifierHead(int64_t n_classes, HeadOptions options) {
  EST_CHECK(n_classes >= 2, ConfigError, "classifier: n_classes is ", n_classes, "; it must be at least 2");
  if (n_classes == 2) return std::make_shared<BinaryClassHead>(std::move(options));
  return std::make_shared<MultiClassHead>(n_classes, std::move(options));
}

namespace {

/// The columns' spec with the label `label_key` parsed as `label` and the weight column as
/// float32 [1]; ConfigError naming `function` for an empty label key or one the columns read.
data::ExampleSpec SpecWithLabel(const char* function, const std::vector<feature_columns::FeatureColumnPtr>& columns,
                                const std::string& label_key, data::FeatureSpec label,
                                const std::string& weight_column) {
  data::ExampleSpec spec = feature_columns::make_parse_example_spec(columns);
  EST_CHECK(!label_key.empty(), ConfigError, function, ": the label key is empty");
  EST_CHECK(spec.count(label_key) == 0, ConfigError, function, ": the label \"", label_key,
            "\" is also a feature the columns read");
  spec.emplace(label_key, std::move(label));
  if (!weight_column.empty()) {
    spec.emplace(weight_column, data::FeatureSpec::FixedLen(data::FeatureType::kFloat32, {1}));
  }
  return spec;
}

/// A label of string classes, each parsed to its index in `label_vocabulary`.
data::FeatureSpec LabelVocabularySpec(const std::string& label_key, const std::vector<std::string>& label_vocabulary) {
  auto ids = std::make_shared<std::unordered_map<std::string, int64_t>>();
  std::string listed;
  for (const std::string& label : label_vocabulary) {
    EST_CHECK(ids->emplace(label, static_cast<int64_t>(ids->size())).second, ConfigError,
              "label_vocabulary: \"", label, "\" is listed twice; expected each class once");
    if (ids->size() <= 10) listed += (listed.empty() ? "\"" : ", \"") + label + "\"";
  }
  if (ids->size() > 10) listed += ", ...";
  return data::FeatureSpec::FixedLen(data::FeatureType::kBytes, {1})
      .ids_decoder([ids, label_key, listed](std::string_view value, int64_t* id) {
        const auto found = ids->find(std::string(value));
        EST_CHECK(found != ids->end(), DataError, "label \"", label_key, "\" is \"", value,
                  "\", which is not in the label vocabulary; expected one of ", listed);
        *id = found->second;
      });
}

}  // namespace

data::ExampleSpec classifier_parse_example_spec(const std::vector<feature_columns::FeatureColumnPtr>& columns,
                                                const std::string& label_key, const std::string& weight_column,
                                                const std::vector<std::string>& label_vocabulary) {
  return SpecWithLabel("classifier_parse_example_spec", columns, label_key,
                       label_vocabulary.empty() ? data::FeatureSpec::FixedLen(data::FeatureType::kInt64, {1})
                                                : LabelVocabularySpec(label_key, label_vocabulary),
                       weight_column);
}

data::ExampleSpec regressor_parse_example_spec(const std::vector<feature_columns::FeatureColumnPtr>& columns,
                                               const std::string& label_key, int64_t label_dimension,
                                               const std::string& weight_column) {
  EST_CHECK(label_dimension >= 1, ConfigError, "regressor_parse_example_spec: label_dimension ", label_dimension);
  return SpecWithLabel("regressor_parse_example_spec", columns, label_key,
                       data::FeatureSpec::FixedLen(data::FeatureType::kFloat32, {label_dimension}), weight_column);
}

}  // namespace est::canned
