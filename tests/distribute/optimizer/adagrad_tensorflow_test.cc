// LibTorch's own Adagrad with initial_accumulator_value and eps set as Keras sets them (0.1,
// 1e-7) computes what TensorFlow's tf.keras.optimizers.legacy.Adagrad (the canned
// DNNClassifier's, ResourceApplyAdagradV2) computes: the accumulator grows by g² first, then
// var -= lr·g / (√accumulator + eps). No optimizer of our own is needed for it.
//
// With the learning rate rounded as Keras keeps it (KerasHyper) they agree to the bit on
// these cases, float32 and float64, with Debian's LibTorch. The order of operations differs
// (TensorFlow divides lr·g by the denominator, LibTorch multiplies g / denominator by -lr),
// so other values may round apart in the last bit: hence 1e-15 relative for float64 and 1e-6
// for float32 (absolute below 1e-6). A sparse gradient (tf.IndexedSlices) leaves the rows TensorFlow did not look up
// as they were; LibTorch's dense step leaves a row whose gradient is zero as it was too (its
// accumulator grows by 0 and the variable moves by 0), so dense gradients with zero rows
// reproduce TensorFlow's sparse update, a looked-up row with a zero gradient included.

#include <torch/optim/adagrad.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "tests/distribute/optimizer/tensorflow_optimizer_values.h"

using namespace est::testing;

TEST_CASE("LibTorch's Adagrad with Keras's initial accumulator and epsilon steps as TensorFlow's Adagrad",
          "[optimizer][adagrad][tensorflow]") {
  int checked = 0;
  for (const auto& c : TensorflowOptimizerCases()) {
    if (c.optimizer != "Adagrad") continue;
    ++checked;
    torch::Tensor var = TensorflowInitialVariable(TensorflowDtype(c)).requires_grad_();
    const auto options =
        torch::optim::AdagradOptions(KerasHyper(c.lr)).initial_accumulator_value(c.initial_accumulator_value);
    torch::optim::Adagrad adagrad({var}, torch::optim::AdagradOptions(options).eps(c.epsilon));
    const double tolerance = c.dtype == "float64" ? 1e-15 : 1e-6;
    for (int step = 0; step < kTfSteps; ++step) {
      var.mutable_grad() = TensorflowDenseGradient(c, step);
      adagrad.step();
      const auto& state = static_cast<const torch::optim::AdagradParamState&>(*adagrad.state().begin()->second);
      INFO(c.name << " step " << step + 1 << "\nvar " << var << "\nTensorFlow's "
                  << TensorflowSlot(c, step + 1, "var"));
      CHECK(RelativeDifference(var.detach(), TensorflowSlot(c, step + 1, "var")) <= tolerance);
      CHECK(RelativeDifference(state.sum(), TensorflowSlot(c, step + 1, "accumulator")) <= tolerance);
    }
  }
  CHECK(checked >= 7);
}
