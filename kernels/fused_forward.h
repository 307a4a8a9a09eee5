#pragma once
// A module's forward run as a traced graph in which chains of ops that pass a large
// activation from one to the next are fused: what TensorFlow's graph optimizer (Grappler's
// remapper) does for a tf.estimator model, as an opt-in step for a LibTorch module.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace torch::nn {
class Module;
}

namespace est::kernels {

/// Runs `forward` (a module's forward on one input tensor) as a graph traced from it, with each
/// convolution → relu → max-pool chain (`aten::conv2d` or `aten::_convolution` of one group,
/// `aten::relu` or `relu_`, `aten::max_pool2d`, each result used only by the next) replaced by
/// ConvReluMaxPool2d; values and gradients are those of the eager forward.
///
/// The forward is traced (torch::jit::tracer) on the first call for each input shape, dtype,
/// device and `requires_grad`, and each training mode of `module`; that call runs it eagerly
/// and returns its result. Later calls with the same signature run the graph on the module's
/// current parameters and buffers. As with `torch.jit.trace`, the graph holds the ops that the
/// traced call ran: a forward whose ops depend on its input's values (branches on a tensor's
/// contents), or which does other work than tensor ops on its input, parameters and buffers
/// (logging, counters, tensors it swaps in), must not be run through FusedForward.
/// Calls run eagerly without grad mode, in inference mode, inside another trace, on other
/// devices than the CPU, and for signatures whose graph holds no chain to fuse or cannot be
/// traced. Safe to call from several threads.
class FusedForward {
 public:
  /// The forward of `module` (whose parameters and buffers the graph reads; it must outlive
  /// this object, which may be one of its members), called as `forward`.
  FusedForward(const torch::nn::Module& module, std::function<at::Tensor(const at::Tensor&)> forward);
  ~FusedForward();
  FusedForward(const FusedForward&) = delete;
  FusedForward& operator=(const FusedForward&) = delete;

  /// The forward's result on `input`.
  at::Tensor operator()(const at::Tensor& input);

  /// How many chains the graph of the last call fused (0: that call ran eagerly).
  int64_t last_fused_chains() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace est::kernels
