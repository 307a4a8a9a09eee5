#pragma once
// The canned estimator of est-train's spec: "estimator" names one of est::canned's (TensorFlow's
// class names) and the spec's other keys are its parameters, under TensorFlow's names.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/est_train/spec_columns.h"
#include "apps/est_train/spec_value.h"
#include "data/example.h"
#include "estimator/canned/head.h"
#include "estimator/estimator.h"
#include "estimator/warm_start_settings.h"

namespace est_train {

/// Makes the spec's estimator in `model_dir` with `config`.
using EstimatorFactory =
    std::function<std::shared_ptr<est::Estimator>(const std::string& model_dir, est::RunConfig config)>;

/// A canned estimator as the spec describes it.
struct SpecEstimator {
  /// TensorFlow's class name ("DNNLinearCombinedClassifier").
  std::string name;
  /// Makes it.
  EstimatorFactory make;
  /// The label's feature.
  std::string label;
  /// A head like the estimator's: what its evaluation reports.
  std::shared_ptr<const est::canned::Head> head;
  /// classifier_parse_example_spec or regressor_parse_example_spec of its columns.
  est::data::ExampleSpec example_spec;
  /// make_parse_example_spec of its columns: what a serving request's records hold.
  est::data::ExampleSpec feature_spec;
  /// A classifier's "label_vocabulary": its classes' names, which its labels are (as strings)
  /// and its exports name classes by; empty: labels are class ids.
  std::vector<std::string> class_labels;
};

/// The spec's keys that are not the estimator's parameters (estimator, columns, label, train,
/// eval, warm_start_from).
const std::vector<std::string>& SpecInputKeys();

/// The estimator `spec` names with its parameters (the spec's keys beyond SpecInputKeys()),
/// reading columns from `columns`, warm-started by `warm_start`. ConfigError naming the JSON
/// path of an unknown estimator, a key that is not one of its parameters, or a bad value.
SpecEstimator ReadSpecEstimator(const SpecValue& spec, const SpecColumns& columns, est::WarmStartSettings warm_start);

}  // namespace est_train
