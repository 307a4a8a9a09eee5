#include "estimator/metrics/metric.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include "common/error.h"
#include "estimator/metrics/accuracy.h"
#include "estimator/metrics/auc.h"
#include "estimator/metrics/mean.h"

using namespace est;
using namespace est::metrics;

TEST_CASE("metrics: state is a float64 1-D CPU tensor detached from autograd", "[metrics]") {
  const at::Tensor values = at::tensor({1.0f, 2.0f}).requires_grad_();
  const MetricPtr mean = Mean(values * 2);
  CHECK(mean->state().scalar_type() == at::kDouble);
  CHECK(mean->state().dim() == 1);
  CHECK(mean->state().device() == at::kCPU);
  CHECK_FALSE(mean->state().requires_grad());
  CHECK(mean->result() == 3.0);
}

TEST_CASE("metrics: merge adds the other state, clone copies it", "[metrics]") {
  const MetricPtr first = Mean(at::tensor({1, 2}));
  const MetricPtr second = Mean(at::tensor({3, 4, 5}));
  const MetricPtr total = first->clone();
  total->merge(*second);
  CHECK(total->kind() == "mean");
  CHECK(total->result() == 3.0);
  CHECK(total->state().equal(at::tensor({15.0, 5.0}, at::kDouble)));
  CHECK(first->result() == 1.5);
  CHECK(first->state().equal(at::tensor({3.0, 2.0}, at::kDouble)));
}

TEST_CASE("metrics: mutable_state sums replicas in place like merge", "[metrics]") {
  const MetricPtr replica0 = Accuracy(at::tensor({1, 1, 0}), at::tensor({1, 0, 0}));
  const MetricPtr replica1 = Accuracy(at::tensor({1, 0}), at::tensor({0, 0}));
  const MetricPtr merged = replica0->clone();
  merged->merge(*replica1);
  replica0->mutable_state().add_(replica1->state());
  CHECK(replica0->result() == merged->result());
  CHECK(replica0->result() == 3.0 / 5.0);
}

TEST_CASE("metrics: a state left with the wrong dtype is an internal error, not a bad read", "[metrics]") {
  const MetricPtr mean = Mean(at::tensor({1.0, 2.0}));
  mean->mutable_state() = mean->state().to(at::kFloat);
  CHECK_THROWS_AS(mean->result(), InternalError);
  const MetricPtr auc = Auc(at::tensor({1, 0}), at::tensor({0.75, 0.25}));
  auc->mutable_state() = auc->state().slice(0, 0, 10);
  CHECK_THROWS_WITH(auc->result(), Catch::Contains("'auc_roc'") && Catch::Contains("800"));
}

TEST_CASE("metrics: merge refuses other kinds or configurations, naming both kinds", "[metrics]") {
  const MetricPtr mean = Mean(at::tensor({1.0}));
  const MetricPtr accuracy = Accuracy(at::tensor({1}), at::tensor({1}));
  CHECK_THROWS_AS(mean->merge(*accuracy), ModelError);
  CHECK_THROWS_WITH(mean->merge(*accuracy), Catch::Contains("'mean'") && Catch::Contains("'accuracy'"));

  const at::Tensor labels = at::tensor({1, 0});
  const at::Tensor probabilities = at::tensor({0.75, 0.25});
  const MetricPtr roc = Auc(labels, probabilities, 200);
  CHECK_THROWS_WITH(roc->merge(*Auc(labels, probabilities, 100)),
                    Catch::Contains("(400 statistics)") && Catch::Contains("(800 statistics)"));
  CHECK_THROWS_WITH(roc->merge(*Auc(labels, probabilities, 200, AucCurve::kPR)),
                    Catch::Contains("'auc_pr'") && Catch::Contains("'auc_roc'"));
  CHECK(mean->result() == 1.0);
}
