#pragma once
// torch::optim::Adam's and AdamW's step in one pass over each parameter instead of eight.

#include <functional>

namespace at {
class Tensor;
}
namespace torch::optim {
class Optimizer;
}

namespace est::kernels {

/// Which of an optimizer's parameters a step updates; empty: all of them.
using ParameterFilter = std::function<bool(const at::Tensor& parameter)>;

/// Steps `optimizer` as `optimizer.step()` would and returns true, when it is exactly a
/// torch::optim::Adam or torch::optim::AdamW (not a subclass) with amsgrad off whose
/// parameters that have a gradient are dense float32 CPU tensors (contiguous, channels-last
/// or another layout without gaps), their gradients and the optimizer's state laid out alike.
/// Each parameter is updated in one vectorized pass that reads the parameter, its gradient and
/// both moments once and writes each once; LibTorch's step makes eight passes and two
/// temporaries. On the 21 M parameters of `make bench`'s MLP, at one thread: 11 ms against
/// 36 ms (91 ms where glibc maps and unmaps each temporary, which est::TuneProcessForTraining's
/// malloc settings prevent). The state (step count, moments) is LibTorch's own, under its own
/// keys, so checkpoints and a later plain step() see no difference.
///
/// The results are LibTorch's to the bit. That depends on how LibTorch's CPU kernels round
/// (its addcmul, for one, fuses a multiply and an add; a pip LibTorch's sqrt is MKL's, not
/// IEEE's correctly rounded one), so it is checked, once per path (Adam or AdamW, with or
/// without weight decay), by running both on probe values in turn: first with the square
/// roots taken in registers, then with LibTorch's own at::sqrt_out on each chunk between two
/// passes. Where neither matches (another LibTorch build, a CPU without AVX2 and FMA) this
/// returns false and logs why once, and the caller runs optimizer.step(). Returns false,
/// having changed nothing, for any other optimizer or parameter.
///
/// With `include`, only the parameters it accepts are stepped; the others keep their values,
/// moments and step counts, so a step may be taken in parts, each parameter once (as the
/// Estimator does while later gradients are still being all-reduced). Whether the step
/// applies is decided on the whole optimizer, so each part of one step gets the same answer.
bool FusedAdamStep(torch::optim::Optimizer& optimizer, const ParameterFilter& include = {});

}  // namespace est::kernels
