#include "estimator/estimator_spec.h"

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "common/error.h"
#include "tests/test_util.h"
#include "estimator/metrics/mean.h"

using namespace est;

TEST_CASE("EstimatorSpec factories set the mode and fields", "[estimator]") {
  auto w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  auto loss = (w * w).sum();
  auto train = EstimatorSpec::Train(loss, sgd).summary("norm", w.norm());
  CHECK(train.mode == Mode::kTrain);
  CHECK(train.optimizers == std::vector<torch::optim::Optimizer*>{&sgd});
  CHECK(train.summaries.count("norm") == 1);
  CHECK_NOTHROW(train.validate(Mode::kTrain));

  auto eval = EstimatorSpec::Eval(loss.detach(), {{"mean", metrics::Mean(w.detach())}});
  CHECK(eval.mode == Mode::kEval);
  CHECK_NOTHROW(eval.validate(Mode::kEval));

  auto predict = EstimatorSpec::Predict({{"y", torch::zeros({3, 2})}});
  CHECK_NOTHROW(predict.validate(Mode::kPredict));
}

TEST_CASE("EstimatorSpec validation follows TensorFlow's rules", "[estimator]") {
  auto w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);

  SECTION("loss must be a scalar") {
    auto spec = EstimatorSpec::Train(w * 2, sgd);
    CHECK_THROWS_MATCHES(spec.validate(Mode::kTrain), ModelError, est::testing::MessageMatches(Catch::Contains("scalar")));
  }
  SECTION("train needs a loss") {
    auto spec = EstimatorSpec::Train(at::Tensor(), sgd);
    CHECK_THROWS_MATCHES(spec.validate(Mode::kTrain), ModelError,
                         est::testing::MessageMatches(Catch::Contains("'Mode::kTrain'") && Catch::Contains("needs a loss")));
  }
  SECTION("eval needs a loss") {
    auto spec = EstimatorSpec::Eval(at::Tensor());
    CHECK_THROWS_MATCHES(spec.validate(Mode::kEval), ModelError,
                         est::testing::MessageMatches(Catch::Contains("'Mode::kEval'") && Catch::Contains("needs a loss")));
  }
  SECTION("predict needs predictions with a batch dimension") {
    CHECK_THROWS_MATCHES(EstimatorSpec::Predict({}).validate(Mode::kPredict), ModelError,
                         est::testing::MessageMatches(Catch::Contains("'Mode::kPredict'") && Catch::Contains("needs predictions")));
    CHECK_THROWS_WITH(EstimatorSpec::Predict({{"p", torch::tensor(1.0)}}).validate(Mode::kPredict),
                      Catch::Contains("'p'"));
  }
  SECTION("the spec's mode must be the requested one") {
    auto spec = EstimatorSpec::Eval((w * w).sum());
    CHECK_THROWS_WITH(spec.validate(Mode::kTrain), Catch::Contains("'Mode::kTrain'") && Catch::Contains("'Mode::kEval'"));
  }
  SECTION("a training loss must be connected to variables") {
    auto spec = EstimatorSpec::Train(torch::tensor(1.0), sgd);
    CHECK_THROWS_WITH(spec.validate(Mode::kTrain), Catch::Contains("require grad"));
  }
  SECTION("a training loss must be computed, not a leaf") {
    auto spec = EstimatorSpec::Train(torch::tensor(1.0, torch::requires_grad()), sgd);
    CHECK_THROWS_MATCHES(spec.validate(Mode::kTrain), ModelError,
                         est::testing::MessageMatches(Catch::Contains("leaf tensor") && Catch::Contains("grad_fn") &&
                                                      Catch::Contains("expected a loss computed")));
  }
  SECTION("train needs an optimizer") {
    auto spec = EstimatorSpec::Train((w * w).sum(), sgd);
    spec.optimizers.clear();
    CHECK_THROWS_MATCHES(spec.validate(Mode::kTrain), ModelError,
                         est::testing::MessageMatches(Catch::Contains("'Mode::kTrain'") && Catch::Contains("needs an optimizer")));
  }
  SECTION("train without a loss and without an optimizer names the loss first") {
    auto spec = EstimatorSpec::Train(at::Tensor(), sgd);
    spec.optimizers.clear();
    CHECK_THROWS_MATCHES(spec.validate(Mode::kTrain), ModelError,
                         est::testing::MessageMatches(Catch::Contains("'Mode::kTrain'") && Catch::Contains("needs a loss")));
  }
  SECTION("a non-scalar loss names its shape") {
    auto spec = EstimatorSpec::Eval(torch::zeros({4, 1}));
    CHECK_THROWS_MATCHES(spec.validate(Mode::kEval), ModelError,
                         est::testing::MessageMatches(Catch::Contains("scalar") && Catch::Contains("[4, 1]")));
  }
  SECTION("integer loss is rejected") {
    auto spec = EstimatorSpec::Eval(torch::tensor(3));
    CHECK_THROWS_WITH(spec.validate(Mode::kEval), Catch::Contains("floating-point"));
  }
  SECTION("summaries are scalars") {
    auto spec = EstimatorSpec::Train((w * w).sum(), sgd).summary("vec", w);
    CHECK_THROWS_WITH(spec.validate(Mode::kTrain), Catch::Contains("'vec'"));
  }
}

TEST_CASE("A training spec's optimizers and schedules are each given once", "[estimator][optimizers]") {
  auto w = torch::ones({2}, torch::requires_grad());
  auto v = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  torch::optim::Adam adam({v}, 0.1);
  torch::optim::Adam other({v}, 0.1);
  const auto loss = (w * v).sum();
  const auto error = [](const EstimatorSpec& spec) {
    return est::testing::ErrorMessageOf<ModelError>([&] { spec.validate(Mode::kTrain); });
  };
  CHECK(error(EstimatorSpec::Train(loss, {sgd, adam}).learning_rate(adam, schedules::Constant(0.5))).empty());
  CHECK_THAT(error(EstimatorSpec::Train(loss, {sgd, sgd})),
             Catch::Contains("optimizer 1 of the training EstimatorSpec is given twice"));
  CHECK_THAT(error(EstimatorSpec::Train(loss, {sgd, adam}).learning_rate(other, schedules::Constant(0.5))),
             Catch::Contains("learning-rate schedule Constant(0.5) is for an optimizer that is not among the "
                             "training EstimatorSpec's"));
  CHECK_THAT(error(EstimatorSpec::Train(loss, {sgd, adam})
                       .learning_rate(schedules::Constant(0.5))
                       .learning_rate(adam, schedules::Constant(0.25))),
             Catch::Contains("two learning-rate schedules would set the same optimizer's rate"));
}
