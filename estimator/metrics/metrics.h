#pragma once
/// Every streaming metric of est::metrics, for model_fn's eval_metric_ops.

#include "estimator/metrics/accuracy.h"
#include "estimator/metrics/accuracy_baseline.h"
#include "estimator/metrics/auc.h"
#include "estimator/metrics/mean.h"
#include "estimator/metrics/mean_squared_error.h"
#include "estimator/metrics/metric.h"
#include "estimator/metrics/precision_recall.h"
