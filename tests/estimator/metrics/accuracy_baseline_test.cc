#include "estimator/metrics/accuracy_baseline.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

using namespace est::metrics;

TEST_CASE("metrics: AccuracyBaseline is the share of the more frequent class", "[metrics]") {
  const MetricPtr baseline = AccuracyBaseline(at::tensor({0.0, 1.0, 0.0, 1.0, 1.0}));
  CHECK(baseline->kind() == "accuracy_baseline");
  CHECK(baseline->result() == Approx(0.6));
  CHECK(AccuracyBaseline(at::tensor({1, 0, 0, 0}))->result() == Approx(0.75));
}

TEST_CASE("metrics: AccuracyBaseline weighs examples and merges across batches", "[metrics]") {
  // Weighted label mean (2 * 1 + 1 * 0 + 1 * 0) / 4 = 0.5.
  const MetricPtr first = AccuracyBaseline(at::tensor({1.0, 0.0, 0.0}), at::tensor({2.0, 1.0, 1.0}));
  CHECK(first->result() == Approx(0.5));
  first->merge(*AccuracyBaseline(at::tensor({1.0, 1.0}).reshape({2, 1})));
  CHECK(first->result() == Approx(4.0 / 6.0));
  CHECK(AccuracyBaseline(at::tensor({1.0}), at::tensor({0.0}))->result() == 0.0);
}
