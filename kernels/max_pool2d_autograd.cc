#include "kernels/max_pool2d_autograd.h"

#include "kernels/cpu_vectors.h"
#include "kernels/max_pool2d_internal.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool2d_compositeimplicitautograd_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices.h>
#include <ATen/ops/max_pool2d_with_indices_backward.h>
#include <ATen/ops/threshold_backward.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

namespace est::kernels {
namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

// The node of relu that made `input`, where the pooling's backward may stand in for it: relu's
// own backward node with no hooks of its own (the hooks of its output, pre-hooks, are run by
// MaxPool2dBackward). Null otherwise.
std::shared_ptr<Node> FoldableRelu(const at::Tensor& input) {
  const std::shared_ptr<Node>& node = input.grad_fn();
  if (!node || input.output_nr() != 0 || node->num_outputs() != 1 || !node->post_hooks().empty()) return nullptr;
  return node->name().rfind("ReluBackward", 0) == 0 ? node : nullptr;
}

// The backward of MaxPool2dAutograd.
class MaxPool2dBackward final : public Node {
 public:
  MaxPool2dBackward(const detail::PoolGeometry& geometry, bool ceil_mode, const at::Tensor& input, at::Tensor codes,
                    std::shared_ptr<Node> relu)
      : geometry_(geometry),
        ceil_mode_(ceil_mode),
        input_(input, /*is_output=*/false),
        codes_(std::move(codes)),
        relu_(std::move(relu)) {}

  std::string name() const override { return "est::kernels::MaxPool2dBackward"; }

  variable_list apply(variable_list&& grads) override {
    const at::Tensor input = input_.unpack();  // throws where it was changed in place since
    if (!grads[0].defined()) return {at::Tensor()};
    const bool relu_hooked = relu_ && !relu_->pre_hooks().empty();
    if (at::GradMode::is_enabled() || relu_hooked || grads[0].scalar_type() != at::kFloat)
      return ByLibTorch(input, grads[0]);
    const at::Tensor grad = grads[0].contiguous();
    at::Tensor grad_input = at::empty(input.sizes(), input.options());
    detail::PoolBackwardPlanes(geometry_, codes_.data_ptr<uint8_t>(), grad.data_ptr<float>(),
                               grad_input.data_ptr<float>(), relu_ != nullptr);
    return {grad_input};
  }

  void release_variables() override {
    input_.reset_data();
    codes_.reset();
    relu_.reset();
  }

 private:
  // The same gradient from LibTorch's ops, differentiable again, with the hooks of relu's output
  // run between the pooling's backward and relu's, as the engine would run them.
  variable_list ByLibTorch(const at::Tensor& input, const at::Tensor& grad) {
    const detail::PoolGeometry& g = geometry_;  // LibTorch's arguments, with their defaults filled in
    const int64_t kernel[] = {g.kernel_h, g.kernel_w}, stride[] = {g.stride_h, g.stride_w};
    const int64_t padding[] = {g.pad_h, g.pad_w}, dilation[] = {g.dilation_h, g.dilation_w};
    at::Tensor indices;
    {
      at::AutoGradMode no_grad(false);
      indices = std::get<1>(at::max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil_mode_));
    }
    at::Tensor grad_input =
        at::max_pool2d_with_indices_backward(grad, input, kernel, stride, padding, dilation, ceil_mode_, indices);
    if (!relu_) return {grad_input};
    variable_list hooked{grad_input};
    for (const auto& hook : relu_->pre_hooks()) hooked = (*hook)(hooked);
    return {at::threshold_backward(hooked[0], input, 0)};
  }

  detail::PoolGeometry geometry_;
  bool ceil_mode_;
  SavedVariable input_;  // for the in-place check, and LibTorch's ops
  at::Tensor codes_;     // each window's winner (PoolWinners::kCodes)
  std::shared_ptr<Node> relu_;
};

}  // namespace

at::Tensor MaxPool2dAutograd(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  const std::optional<detail::MaxPool2dPlan> plan =
      detail::PlanMaxPool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
  const bool wants_grad = at::GradMode::is_enabled() && input.requires_grad();
  if (!plan || (wants_grad && !plan->with_codes) || input._fw_grad(/*level=*/0).defined() || detail::InJitTrace())
    return at::compositeimplicitautograd::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
  at::Tensor output = detail::EmptyPooled(input, plan->geometry, at::kFloat);
  if (!wants_grad) {
    detail::PoolPlanes(*plan, detail::PoolWinners::kNone, input.data_ptr<float>(), output.data_ptr<float>(), nullptr);
    return output;
  }
  at::Tensor codes = detail::EmptyPooled(input, plan->geometry, at::kByte);
  detail::PoolPlanes(*plan, detail::PoolWinners::kCodes, input.data_ptr<float>(), output.data_ptr<float>(),
                     codes.data_ptr<uint8_t>());
  std::shared_ptr<Node> relu = FoldableRelu(input);
  torch::autograd::edge_list edges = relu ? relu->next_edges() : torch::autograd::collect_next_edges(input);
  std::shared_ptr<MaxPool2dBackward> node(
      new MaxPool2dBackward(plan->geometry, ceil_mode, input, std::move(codes), std::move(relu)),
      torch::autograd::deleteNode);
  node->set_next_edges(std::move(edges));
  torch::autograd::set_history(output, node);
  return output;
}

}  // namespace est::kernels
