#pragma once
// What the tests of the layer ops (input, weight, bias) → output share: one forward and
// backward pass, and exact comparisons.

#include <torch/torch.h>

namespace est_test {

/// An op's output and the gradients of its three arguments.
struct OpResult {
  torch::Tensor output, grad_input, grad_weight, grad_bias;
};

/// Output and gradients of `op(input, weight, bias)` under the loss sum(output · seed), the
/// seed normal noise from a fixed generator seed; the input's gradient only when
/// `input_grad`, the bias's only when it is defined.
template <class Op>
OpResult RunOp(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias, Op op,
               bool input_grad = true) {
  auto x = input.clone().requires_grad_(input_grad);
  auto w = weight.clone().requires_grad_();
  auto b = bias.defined() ? bias.clone().requires_grad_() : torch::Tensor();
  auto y = op(x, w, b);
  torch::manual_seed(99);
  y.backward(torch::randn(y.sizes()).to(y.options()));  // the same seed for float32 and float64 runs
  return {y.detach(), input_grad ? x.grad() : torch::Tensor(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

/// Both undefined, or the same sizes and values.
inline bool SameTensor(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() == b.defined() && (!a.defined() || (a.sizes() == b.sizes() && torch::equal(a, b)));
}

/// The same output and gradients, to the bit.
inline bool SameResult(const OpResult& a, const OpResult& b) {
  return SameTensor(a.output, b.output) && SameTensor(a.grad_input, b.grad_input) &&
         SameTensor(a.grad_weight, b.grad_weight) && SameTensor(a.grad_bias, b.grad_bias);
}

/// The result computed in float64 from the same values, cast back to float32: the reference
/// for any order of summing float32 products.
template <class Op>
OpResult RunOpInDouble(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias, Op op,
                       bool input_grad = true) {
  auto result = RunOp(input.to(torch::kDouble), weight.to(torch::kDouble),
                      bias.defined() ? bias.to(torch::kDouble) : torch::Tensor(), op, input_grad);
  for (auto* t : {&result.output, &result.grad_input, &result.grad_weight, &result.grad_bias})
    if (t->defined()) *t = t->to(torch::kFloat);
  return result;
}

}  // namespace est_test
