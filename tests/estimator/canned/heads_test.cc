// The heads against TensorFlow 2.15's own (tensorflow_head_values.inc, written by
// make_tensorflow_heads.py): the training loss of each batch under both reductions, and every
// metric of TensorFlow's head, by name, after the same eval batches.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "estimator/canned/binary_class_head.h"
#include "estimator/canned/multi_class_head.h"
#include "estimator/canned/multi_label_head.h"
#include "estimator/canned/regression_head.h"

using namespace est;
using namespace est::canned;

namespace {

struct TensorFlowBatch {
  std::vector<double> logits;
  std::vector<int64_t> logits_shape;
  std::vector<double> labels;
  std::vector<int64_t> labels_shape;
  std::vector<double> weights;
  double loss_sum_over_batch_size;
  double loss_sum;
};

struct TensorFlowCase {
  std::string name;
  std::vector<TensorFlowBatch> batches;
  std::vector<std::pair<std::string, double>> metrics;
};

const std::vector<TensorFlowCase> kTensorFlowCases = {
#include "tests/estimator/canned/tensorflow_head_values.inc"
};

/// The head make_tensorflow_heads.py made for `name`, with the weight column "w".
std::unique_ptr<Head> HeadOfCase(const std::string& name, LossReduction reduction) {
  const HeadOptions options = HeadOptions().weight_column("w").loss_reduction(reduction);
  if (name == "binary") return std::make_unique<BinaryClassHead>(options, std::vector<double>{0.3, 0.7});
  if (name.rfind("binary", 0) == 0) return std::make_unique<BinaryClassHead>(options);
  if (name == "multi_class") return std::make_unique<MultiClassHead>(3, options);
  if (name == "multi_label") return std::make_unique<MultiLabelHead>(3, options, std::vector<double>{0.5},
                                                                     std::vector<int64_t>{0, 2});
  if (name == "regression") return std::make_unique<RegressionHead>(2, options);
  FAIL("no head for case " << name);
  return nullptr;
}

at::Tensor TensorOf(const std::vector<double>& values, const std::vector<int64_t>& shape, at::ScalarType dtype) {
  return at::tensor(values, at::kDouble).reshape(shape).to(dtype);
}

at::ScalarType LabelType(const std::string& name) {
  return name == "multi_class" || name == "multi_label" ? at::kLong : at::kFloat;
}

}  // namespace

TEST_CASE("heads: training losses equal TensorFlow's under both reductions", "[canned][heads]") {
  for (const TensorFlowCase& tf_case : kTensorFlowCases) {
    for (const LossReduction reduction : {LossReduction::kSumOverBatchSize, LossReduction::kSum}) {
      const std::unique_ptr<Head> head = HeadOfCase(tf_case.name, reduction);
      for (const TensorFlowBatch& batch : tf_case.batches) {
        const at::Tensor logits = TensorOf(batch.logits, batch.logits_shape, at::kFloat);
        const at::Tensor labels = TensorOf(batch.labels, batch.labels_shape, LabelType(tf_case.name));
        const Features features({{"w", TensorOf(batch.weights, {batch.logits_shape[0], 1}, at::kFloat)}});
        const double expected =
            reduction == LossReduction::kSum ? batch.loss_sum : batch.loss_sum_over_batch_size;
        INFO(tf_case.name << (reduction == LossReduction::kSum ? " SUM" : " SUM_OVER_BATCH_SIZE"));
        CHECK(head->loss(labels, logits, features).item<double>() == Approx(expected).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("heads: every metric of TensorFlow's head, by name, within 1e-3", "[canned][heads]") {
  for (const TensorFlowCase& tf_case : kTensorFlowCases) {
    INFO(tf_case.name);
    const std::unique_ptr<Head> head = HeadOfCase(tf_case.name, LossReduction::kSumOverBatchSize);
    MetricMap merged;
    double loss_sum = 0.0;
    for (const TensorFlowBatch& batch : tf_case.batches) {
      const at::Tensor logits = TensorOf(batch.logits, batch.logits_shape, at::kFloat);
      const at::Tensor labels = TensorOf(batch.labels, batch.labels_shape, LabelType(tf_case.name));
      const Features features({{"w", TensorOf(batch.weights, {batch.logits_shape[0], 1}, at::kFloat)}});
      const EstimatorSpec spec = head->spec(Mode::kEval, features, labels, logits);
      loss_sum += spec.loss.item<double>();
      for (const auto& [key, metric] : spec.eval_metric_ops) {
        if (merged.count(key)) {
          merged[key]->merge(*metric);
        } else {
          merged[key] = metric->clone();
        }
      }
    }
    std::set<std::string> expected_keys;
    for (const auto& [key, value] : tf_case.metrics) {
      expected_keys.insert(key);
      INFO(key);
      if (key == "loss") {
        // Estimator::evaluate reports the mean of the batches' losses.
        CHECK(loss_sum / static_cast<double>(tf_case.batches.size()) == Approx(value).margin(1e-3));
        continue;
      }
      REQUIRE(merged.count(key) == 1);
      CHECK(merged.at(key)->result() == Approx(value).margin(1e-3));
    }
    for (const auto& [key, metric] : merged) {
      INFO("a metric TensorFlow's head does not have: " << key);
      CHECK(expected_keys.count(key) == 1);
    }
  }
}

TEST_CASE("heads: predictions with TensorFlow's keys and shapes", "[canned][heads]") {
  const at::Tensor logits = at::tensor({2.0F, -1.0F, 0.0F}).reshape({3, 1});
  const TensorMap binary = BinaryClassHead().predictions(logits);
  CHECK(binary.at("class_ids").equal(at::tensor({1, 0, 0}, at::kLong).reshape({3, 1})));
  CHECK(binary.at("probabilities").sizes() == at::IntArrayRef({3, 2}));
  CHECK(binary.at("probabilities").select(1, 1).allclose(binary.at("logistic").reshape({3})));
  CHECK(binary.at("all_class_ids").equal(at::tensor({0, 1, 0, 1, 0, 1}, at::kLong).reshape({3, 2})));

  const at::Tensor three = at::tensor({0.1F, 3.0F, 3.0F, -1.0F, -2.0F, -3.0F}).reshape({2, 3});
  const TensorMap multi = MultiClassHead(3).predictions(three);
  CHECK(multi.at("class_ids").equal(at::tensor({1, 0}, at::kLong).reshape({2, 1})));
  CHECK(multi.at("probabilities").sum(1).allclose(at::ones({2})));
  CHECK(MultiLabelHead(3).predictions(three).at("probabilities").allclose(at::sigmoid(three)));
  CHECK(RegressionHead(3).predictions(three).at("predictions").equal(three));
}

TEST_CASE("heads: the name suffixes every metric key", "[canned][heads]") {
  const BinaryClassHead head(HeadOptions().name("ctr"));
  const MetricMap metrics =
      head.metrics(at::tensor({1.0F, 0.0F}), at::tensor({0.5F, -0.5F}).reshape({2, 1}), Features());
  CHECK(metrics.count("auc/ctr") == 1);
  CHECK(metrics.count("auc") == 0);
}

TEST_CASE("heads: bad labels, logits, weights and options are named", "[canned][heads]") {
  const at::Tensor logits = at::zeros({2, 1});
  const BinaryClassHead binary(HeadOptions().weight_column("w"));
  const Features weights({{"w", at::ones({2})}});
  CHECK_THROWS_WITH(binary.loss(at::tensor({0.0F, 2.0F}), logits, weights),
                    Catch::Contains("label 2 is outside [0, 1]"));
  CHECK_THROWS_WITH(binary.loss(at::zeros({3}), logits, weights), Catch::Contains("labels of shape [3]"));
  CHECK_THROWS_WITH(binary.loss(at::zeros({2}), at::zeros({2, 2}), weights),
                    Catch::Contains("logits of shape [2, 2] where [batch, 1] was expected"));
  CHECK_THROWS_AS(binary.loss(at::zeros({2}), logits, Features()), ConfigError);
  CHECK_THROWS_WITH(binary.loss(at::zeros({2}), logits, Features({{"w", at::ones({3})}})),
                    Catch::Contains("the weight column \"w\" has shape [3]"));
  CHECK_THROWS_WITH(MultiClassHead(3).loss(at::tensor({0, 3}), at::zeros({2, 3}), Features()),
                    Catch::Contains("label 3 is outside [0, 2]"));
  CHECK_THROWS_WITH(MultiClassHead(3).loss(at::tensor({0.0, 1.0}), at::zeros({2, 3}), Features()),
                    Catch::Contains("integer class ids"));
  CHECK_THROWS_AS(MultiClassHead(2), ConfigError);
  CHECK_THROWS_WITH(BinaryClassHead(HeadOptions(), {1.0}), Catch::Contains("threshold 1 is not in (0, 1)"));
  CHECK_THROWS_AS(MultiLabelHead(3, HeadOptions(), {}, {3}), ConfigError);
  CHECK_THROWS_AS(RegressionHead(0), ConfigError);
  CHECK_THROWS_AS(binary.spec(Mode::kTrain, weights, at::zeros({2}), logits), ModelError);
}
