// est::optim::Ftrl against TensorFlow's own tf.keras.optimizers.legacy.Ftrl (the canned
// LinearClassifier's): the variable, accumulator and linear slots after each of five steps,
// dense and sparse gradients, every option; its options' checks; its state through a
// checkpoint's archive.
//
// Tolerance: 1e-14 relative for float64, 1e-6 for float32 (absolute below 1e-6). Both compute
// in TensorFlow's order of operations and the variable's dtype, with the options rounded as
// Keras keeps them (KerasHyper), and with Debian's LibTorch agree to the bit wherever the
// update takes square roots or no root (learning_rate_power -0.5, 0, -1). Powers (-0.3) are
// Eigen's pow in TensorFlow and std::pow in LibTorch, which differ in the last bit for a few
// elements (after five steps: 2 ulp in float32, 1.6e-7 relative; 6e-15 in float64); and a
// LibTorch built with MKL's square root (pip's) may round a root otherwise.

#include "distribute/optimizer/ftrl.h"

#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "tests/distribute/optimizer/tensorflow_optimizer_values.h"

using est::optim::Ftrl;
using est::optim::FtrlOptions;
using est::optim::FtrlParamState;
using namespace est::testing;

namespace {

/// The case's options, those Keras keeps in float32 rounded so (a float32 variable's update
/// rounds them anyway).
FtrlOptions FtrlCaseOptions(const TensorflowOptimizerCase& c) {
  return FtrlOptions(KerasHyper(c.lr))
      .learning_rate_power(KerasHyper(c.learning_rate_power))
      .initial_accumulator_value(c.initial_accumulator_value)
      .l1(KerasHyper(c.l1))
      .l2(KerasHyper(c.l2))
      .l2_shrinkage(KerasHyper(c.l2_shrinkage))
      .beta(KerasHyper(c.beta));
}

double FtrlTolerance(const TensorflowOptimizerCase& c) { return c.dtype == "float64" ? 1e-14 : 1e-6; }

const FtrlParamState& FtrlState(const Ftrl& optimizer) {
  REQUIRE(optimizer.state().size() == 1);
  return static_cast<const FtrlParamState&>(*optimizer.state().begin()->second);
}

/// Runs `c` with gradients from `gradient` and compares every step's slots with TensorFlow's.
template <typename Gradient>
void CheckFtrlCase(const TensorflowOptimizerCase& c, FtrlOptions options, Gradient gradient) {
  torch::Tensor var = TensorflowInitialVariable(TensorflowDtype(c)).requires_grad_();
  Ftrl ftrl({var}, options);
  for (int step = 0; step < kTfSteps; ++step) {
    var.mutable_grad() = gradient(c, step);
    ftrl.step();
    const FtrlParamState& state = FtrlState(ftrl);
    for (const auto& [slot, ours] : {std::pair<const char*, torch::Tensor>{"var", var.detach()},
                                     {"accumulator", state.accumulator()},
                                     {"linear", state.linear()}}) {
      INFO(c.name << " step " << step + 1 << " " << slot << "\nours " << ours << "\nTensorFlow's "
                  << TensorflowSlot(c, step + 1, slot));
      CHECK(ours.scalar_type() == TensorflowDtype(c));
      CHECK(RelativeDifference(ours, TensorflowSlot(c, step + 1, slot)) <= FtrlTolerance(c));
    }
  }
}

std::vector<TensorflowOptimizerCase> FtrlCases(const std::string& gradient) {
  std::vector<TensorflowOptimizerCase> cases;
  for (const auto& c : TensorflowOptimizerCases())
    if (c.optimizer == "Ftrl" && c.gradient == gradient) cases.push_back(c);
  return cases;
}

}  // namespace

TEST_CASE("Ftrl with dense gradients steps as TensorFlow's Ftrl", "[optimizer][ftrl][tensorflow]") {
  const auto cases = FtrlCases("dense");
  REQUIRE(cases.size() >= 15);
  for (const auto& c : cases) CheckFtrlCase(c, FtrlCaseOptions(c), TensorflowDenseGradient);
}

TEST_CASE("Ftrl updates only the looked-up rows, as TensorFlow's sparse apply does", "[optimizer][ftrl][tensorflow]") {
  const auto cases = FtrlCases("sparse");
  REQUIRE(cases.size() >= 8);
  for (const auto& c : cases) {
    // A dense gradient with zero rows under sparse_rows, and TensorFlow's IndexedSlices as a
    // sparse COO gradient.
    CheckFtrlCase(c, FtrlCaseOptions(c).sparse_rows(true), TensorflowDenseGradient);
    CheckFtrlCase(c, FtrlCaseOptions(c), TensorflowSparseGradient);
  }
}

TEST_CASE("Ftrl with a sparse COO gradient updates a looked-up row whose gradient is zero, as TensorFlow does",
          "[optimizer][ftrl][tensorflow]") {
  const auto cases = FtrlCases("zero_row");
  REQUIRE(cases.size() >= 3);
  for (const auto& c : cases) CheckFtrlCase(c, FtrlCaseOptions(c), TensorflowSparseGradient);
}

TEST_CASE("Ftrl's sparse_rows leaves a row with a zero dense gradient as it was", "[optimizer][ftrl]") {
  // The documented difference: TensorFlow looked row 2 up with a zero gradient in the first
  // step and set it to 0 (its linear term is 0); sparse_rows cannot tell it from a row not
  // looked up, and keeps the row's initial value and state.
  const auto cases = FtrlCases("zero_row");
  const auto found = std::find_if(cases.begin(), cases.end(), [](const TensorflowOptimizerCase& c) {
    return c.name == "ftrl_defaults/float32/zero_row";
  });
  REQUIRE(found != cases.end());
  const TensorflowOptimizerCase& c = *found;
  torch::Tensor var = TensorflowInitialVariable(TensorflowDtype(c)).requires_grad_();
  const torch::Tensor initial = var.detach().clone();
  Ftrl ftrl({var}, FtrlCaseOptions(c).sparse_rows(true));
  var.mutable_grad() = TensorflowDenseGradient(c, 0);
  ftrl.step();
  CHECK(torch::equal(TensorflowSlot(c, 1, "var")[2], torch::zeros({kTfCols}, TensorflowDtype(c))));
  CHECK(torch::equal(var.detach()[2], initial[2]));
  CHECK(torch::equal(FtrlState(ftrl).linear()[2], torch::zeros({kTfCols}, TensorflowDtype(c))));
  CHECK(torch::equal(FtrlState(ftrl).accumulator()[2], torch::full({kTfCols}, c.initial_accumulator_value,
                                                                    TensorflowDtype(c))));
  // Untouched rows, too: 1, 3 and 5.
  for (int64_t row : {1, 3, 5}) CHECK(torch::equal(var.detach()[row], initial[row]));
  // Without sparse_rows every row is updated, the zero rows set from their linear term (0).
  torch::Tensor dense_var = TensorflowInitialVariable(TensorflowDtype(c)).requires_grad_();
  Ftrl dense({dense_var}, FtrlCaseOptions(c));
  dense_var.mutable_grad() = TensorflowDenseGradient(c, 0);
  dense.step();
  CHECK(torch::equal(dense_var.detach()[3], torch::zeros({kTfCols}, TensorflowDtype(c))));
}

TEST_CASE("Ftrl's options are TensorFlow's defaults and are checked", "[optimizer][ftrl]") {
  const FtrlOptions defaults;
  CHECK(defaults.lr() == 0.001);
  CHECK(defaults.learning_rate_power() == -0.5);
  CHECK(defaults.initial_accumulator_value() == 0.1);
  CHECK(defaults.l1() == 0);
  CHECK(defaults.l2() == 0);
  CHECK(defaults.l2_shrinkage() == 0);
  CHECK(defaults.beta() == 0);
  CHECK_FALSE(defaults.sparse_rows());
  torch::Tensor w = torch::zeros({3});
  const auto fails = [&](const FtrlOptions& options, const char* option) {
    INFO(option);
    CHECK_THROWS_AS(Ftrl({w}, options), est::ConfigError);
    CHECK_THROWS_WITH(Ftrl({w}, options), Catch::Contains(std::string("option ") + option));
  };
  fails(FtrlOptions(0), "lr");
  fails(FtrlOptions(-0.1), "lr");
  fails(FtrlOptions(0.1).learning_rate_power(0.5), "learning_rate_power");
  fails(FtrlOptions(0.1).initial_accumulator_value(-1), "initial_accumulator_value");
  fails(FtrlOptions(0.1).l1(-1), "l1");
  fails(FtrlOptions(0.1).l2(std::nan("")), "l2");
  fails(FtrlOptions(0.1).l2_shrinkage(-1), "l2_shrinkage");
  fails(FtrlOptions(0.1).beta(-1), "beta");
  CHECK_NOTHROW(Ftrl({w}, FtrlOptions(0.1).learning_rate_power(0).initial_accumulator_value(0)));
  // An option changed after construction (a schedule, a param group) is checked at the step.
  Ftrl ftrl({w}, FtrlOptions(0.1));
  w.mutable_grad() = torch::ones({3});
  static_cast<FtrlOptions&>(ftrl.param_groups()[0].options()).l1(-1);
  CHECK_THROWS_WITH(ftrl.step(), Catch::Contains("option l1 is -1"));
  ftrl.param_groups()[0].options().set_lr(0.5);
  CHECK(static_cast<FtrlOptions&>(ftrl.param_groups()[0].options()).lr() == 0.5);
}

TEST_CASE("Ftrl's state goes through a checkpoint's archive and the training continues identically",
          "[optimizer][ftrl]") {
  torch::manual_seed(3);
  const auto options = FtrlOptions(0.1).l1(0.01).l2(0.02).l2_shrinkage(0.01).beta(0.1).learning_rate_power(-0.4);
  torch::Tensor embedding = torch::randn({10, 3}).requires_grad_();
  torch::Tensor bias = torch::randn({3}).requires_grad_();
  Ftrl ftrl({torch::optim::OptimizerParamGroup({embedding}, std::make_unique<FtrlOptions>(
                                                                 FtrlOptions(options).sparse_rows(true))),
             torch::optim::OptimizerParamGroup({bias})},
            options);
  std::vector<torch::Tensor> grads;
  for (int step = 0; step < 6; ++step) {
    grads.push_back(torch::randn({10, 3}) * (torch::rand({10, 1}) > 0.5));
    grads.push_back(torch::randn({3}));
  }
  const auto step = [&](Ftrl& optimizer, torch::Tensor& e, torch::Tensor& b, int i) {
    e.mutable_grad() = grads[2 * i];
    b.mutable_grad() = grads[2 * i + 1];
    optimizer.step();
  };
  for (int i = 0; i < 3; ++i) step(ftrl, embedding, bias, i);
  // As estimator/model_checkpoint.cc's SerializeOptimizer and DeserializeOptimizer do.
  std::ostringstream out;
  {
    torch::serialize::OutputArchive archive;
    ftrl.save(archive);
    archive.save_to(out);
  }
  torch::Tensor restored_embedding = embedding.detach().clone().requires_grad_();
  torch::Tensor restored_bias = bias.detach().clone().requires_grad_();
  Ftrl restored({torch::optim::OptimizerParamGroup({restored_embedding}, std::make_unique<FtrlOptions>(
                                                                          FtrlOptions(options).sparse_rows(true))),
                 torch::optim::OptimizerParamGroup({restored_bias})},
                options);
  {
    std::istringstream in(out.str());
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    restored.load(archive);
  }
  REQUIRE(restored.state().size() == 2);
  for (int i = 3; i < 6; ++i) {
    step(ftrl, embedding, bias, i);
    step(restored, restored_embedding, restored_bias, i);
  }
  CHECK(torch::equal(restored_embedding, embedding));
  CHECK(torch::equal(restored_bias, bias));
  // A fresh optimizer (no state loaded) continues differently: the state mattered.
  torch::Tensor fresh = embedding.detach().clone().requires_grad_();
  Ftrl fresh_ftrl({fresh}, options);
  fresh.mutable_grad() = grads[0];
  fresh_ftrl.step();
  embedding.mutable_grad() = grads[0];
  ftrl.step();
  CHECK_FALSE(torch::equal(fresh, embedding));
}

TEST_CASE("Ftrl updates a large tensor in slices exactly as in one piece", "[optimizer][ftrl]") {
  // 300 x 100 elements go through the slices of the contiguous path; the same values laid out
  // transposed (not contiguous) go through each operation once over the whole tensor.
  torch::manual_seed(5);
  const torch::Tensor start = torch::randn({300, 100});
  torch::Tensor sliced = start.clone().requires_grad_();
  torch::Tensor whole = start.t().contiguous().t().requires_grad_();
  REQUIRE_FALSE(whole.is_contiguous());
  const auto options = FtrlOptions(0.1).l1(0.05).l2(0.01).l2_shrinkage(0.02).beta(0.5);
  Ftrl sliced_ftrl({sliced}, options);
  Ftrl whole_ftrl({whole}, options);
  for (int step = 0; step < 4; ++step) {
    const torch::Tensor grad = torch::randn({300, 100});
    sliced.mutable_grad() = grad;
    whole.mutable_grad() = grad.t().contiguous().t();
    sliced_ftrl.step();
    whole_ftrl.step();
  }
  CHECK(torch::equal(sliced, whole));
  CHECK(torch::equal(FtrlState(sliced_ftrl).linear(), FtrlState(whole_ftrl).linear()));
  CHECK(torch::equal(FtrlState(sliced_ftrl).accumulator(), FtrlState(whole_ftrl).accumulator()));
}
