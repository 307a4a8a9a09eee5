#pragma once
/// The model_fn of every canned estimator: a linear part, a DNN part or a bias alone, their logits
/// summed, the head's EstimatorSpec. Internal to estimator/canned/.

#include <memory>
#include <optional>
#include <vector>

#include "estimator/canned/dnn_network.h"
#include "estimator/canned/head.h"
#include "estimator/canned/optimizer_spec.h"
#include "estimator/feature_columns/embedding_lookup.h"
#include "estimator/feature_columns/feature_column.h"
#include "estimator/model_fn.h"

namespace est::canned::detail {

/// The "linear" module: a LinearModel, stepped by its own optimizer ("linear_optimizer").
struct LinearPart {
  std::vector<feature_columns::FeatureColumnPtr> columns;
  feature_columns::Combiner sparse_combiner = feature_columns::Combiner::kSum;
  OptimizerSpec optimizer;
  double default_learning_rate = 0.2;
};

/// The "dnn" module: a DnnNetwork, stepped by its own optimizer ("dnn_optimizer").
struct DnnPart {
  std::vector<feature_columns::DenseColumnPtr> columns;
  DnnNetworkOptions network;
  OptimizerSpec optimizer;
  double default_learning_rate = 0.001;
};

/// The "baseline" module: a bias alone ("baseline/bias"), stepped by "baseline_optimizer".
struct BaselinePart {
  OptimizerSpec optimizer;
  double default_learning_rate = 0.3;
};

/// What a canned estimator is made of; at least one part.
struct CannedModel {
  std::shared_ptr<const Head> head;
  std::optional<LinearPart> linear;
  std::optional<DnnPart> dnn;
  std::optional<BaselinePart> baseline;
};

/// The model_fn of `model`; ConfigError (here) for a model without parts or without columns.
ModelFn CannedModelFn(CannedModel model);

}  // namespace est::canned::detail
