#include "kernels/fused_forward.h"

#include "kernels/conv_relu_max_pool.h"

#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/library.h>
#include <torch/nn/module.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

namespace est::kernels {
namespace {

// The fused chain as the graph calls it: ConvReluMaxPool2d with LibTorch's arguments.
at::Tensor ConvReluMaxPoolOp(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                             at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                             at::IntArrayRef kernel_size, at::IntArrayRef pool_stride, at::IntArrayRef pool_padding,
                             at::IntArrayRef pool_dilation, bool ceil_mode) {
  return ConvReluMaxPool2d(input, weight, bias.value_or(at::Tensor()),
                           {stride.vec(), padding.vec(), dilation.vec(), kernel_size.vec(), pool_stride.vec(),
                            pool_padding.vec(), pool_dilation.vec(), ceil_mode});
}

constexpr const char* kFusedOp = "est::conv_relu_max_pool2d";

TORCH_LIBRARY(est, m) {
  m.def(
      "conv_relu_max_pool2d(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
      "int[] kernel_size, int[] pool_stride, int[] pool_padding, int[] pool_dilation, bool ceil_mode) -> Tensor",
      &ConvReluMaxPoolOp);
}

// The constant int, bool or int list a graph value holds (a prim::Constant, or for a list a
// prim::ListConstruct of constant ints), if it holds one.
template <typename T>
std::optional<T> ConstantOf(const torch::jit::Value* value) {
  if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    if (value->node()->kind() == c10::prim::ListConstruct) {
      std::vector<int64_t> list;
      for (const torch::jit::Value* item : value->node()->inputs()) {
        const auto element = ConstantOf<int64_t>(item);
        if (!element) return std::nullopt;
        list.push_back(*element);
      }
      return list;
    }
  }
  const auto constant = torch::jit::toIValue(value);
  if (!constant) return std::nullopt;
  if constexpr (std::is_same_v<T, bool>) {
    if (constant->isBool()) return constant->toBool();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (constant->isInt()) return constant->toInt();
  } else {
    if (constant->isIntList()) return constant->toIntVector();
  }
  return std::nullopt;
}

// A convolution of one group that is not transposed, its stride, padding and dilation constant
// int lists (not conv2d's padding="same"): `aten::conv2d(input, weight, bias, stride, padding,
// dilation, groups)` or `aten::_convolution(input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups, ...)`.
bool IsPlainConvolution(const torch::jit::Node* node) {
  const bool conv2d = node->kind() == c10::Symbol::fromQualString("aten::conv2d") && node->inputs().size() == 7;
  const bool convolution =
      node->kind() == c10::Symbol::fromQualString("aten::_convolution") && node->inputs().size() >= 9;
  if (!conv2d && !convolution) return false;
  for (size_t i = 3; i < 6; ++i)
    if (!ConstantOf<std::vector<int64_t>>(node->input(i))) return false;
  if (conv2d) return ConstantOf<int64_t>(node->input(6)) == int64_t{1};
  const auto output_padding = ConstantOf<std::vector<int64_t>>(node->input(7));
  if (ConstantOf<bool>(node->input(6)) != false || ConstantOf<int64_t>(node->input(8)) != int64_t{1} ||
      !output_padding)
    return false;
  for (int64_t v : *output_padding)
    if (v != 0) return false;
  return true;
}

// The node that computes `value` where `value` is its only output and has one use.
torch::jit::Node* OnlyUseProducer(torch::jit::Value* value) {
  if (value->uses().size() != 1 || value->node()->outputs().size() != 1) return nullptr;
  return value->node();
}

// Replaces each convolution → relu → max-pool chain of `graph` by the fused op; how many.
int64_t FuseConvReluMaxPool(const std::shared_ptr<torch::jit::Graph>& graph) {
  const auto max_pool = c10::Symbol::fromQualString("aten::max_pool2d");
  const auto relu = c10::Symbol::fromQualString("aten::relu");
  const auto relu_ = c10::Symbol::fromQualString("aten::relu_");
  std::vector<torch::jit::Node*> pools;
  for (torch::jit::Node* node : graph->nodes())
    if (node->kind() == max_pool && node->inputs().size() == 6) pools.push_back(node);
  int64_t fused = 0;
  for (torch::jit::Node* pool : pools) {
    torch::jit::Node* activation = OnlyUseProducer(pool->input(0));
    if (!activation || (activation->kind() != relu && activation->kind() != relu_)) continue;
    torch::jit::Node* conv = OnlyUseProducer(activation->input(0));
    if (!conv || !IsPlainConvolution(conv)) continue;
    torch::jit::Node* chain = graph->create(c10::Symbol::fromQualString(kFusedOp),
                                            {conv->input(0), conv->input(1), conv->input(2), conv->input(3),
                                             conv->input(4), conv->input(5), pool->input(1), pool->input(2),
                                             pool->input(3), pool->input(4), pool->input(5)});
    chain->insertBefore(pool);
    chain->output()->setType(pool->output()->type());
    pool->output()->replaceAllUsesWith(chain->output());
    pool->destroy();
    activation->destroy();
    conv->destroy();
    ++fused;
  }
  if (fused > 0) torch::jit::EliminateDeadCode(graph);
  return fused;
}

}  // namespace

struct FusedForward::Impl {
  // What a traced graph is kept for: the input's shape, dtype, device and requires_grad, and the
  // module's training mode.
  struct Signature {
    std::vector<int64_t> sizes;
    int dtype = 0;
    std::string device;
    bool requires_grad = false, training = false;
    bool operator<(const Signature& o) const {
      return std::tie(sizes, dtype, device, requires_grad, training) <
             std::tie(o.sizes, o.dtype, o.device, o.requires_grad, o.training);
    }
  };

  // A signature's graph, compiled for the interpreter; none where the forward runs eagerly.
  struct Traced {
    std::unique_ptr<torch::jit::Code> code;
    int64_t fused = 0;
  };

  const torch::nn::Module* module = nullptr;
  std::function<at::Tensor(const at::Tensor&)> forward;
  std::mutex mutex;
  std::map<Signature, std::shared_ptr<const Traced>> graphs;
  std::atomic<int64_t> last_fused{0};

  // The tensors the graph reads besides the input, in its inputs' order.
  std::vector<at::Tensor> State() const {
    std::vector<at::Tensor> state = module->parameters();
    for (const at::Tensor& buffer : module->buffers()) state.push_back(buffer);
    return state;
  }

  // Traces the forward on `input` (running it), fuses its graph and keeps it for `signature`;
  // returns the forward's result.
  at::Tensor Trace(const at::Tensor& input, const Signature& signature) {
    torch::jit::Stack inputs{input};
    for (const at::Tensor& tensor : State()) inputs.emplace_back(tensor);
    auto traced = std::make_shared<Traced>();
    at::Tensor result;
    try {
      auto [state, outputs] = torch::jit::tracer::trace(
          std::move(inputs),
          [&](torch::jit::Stack stack) -> torch::jit::Stack { return {forward(stack.at(0).toTensor())}; },
          [](const at::Tensor&) { return std::string(); }, /*strict=*/false, /*force_outplace=*/false);
      result = outputs.at(0).toTensor();
      traced->fused = FuseConvReluMaxPool(state->graph);
      if (traced->fused > 0) traced->code = std::make_unique<torch::jit::Code>(state->graph, "fused_forward");
    } catch (const c10::Error&) {
      // Not traceable (or the forward's own error): this signature runs eagerly, which raises
      // the forward's error again where it is the forward's.
      if (torch::jit::tracer::isTracing()) torch::jit::tracer::abandon();
      result = forward(input);
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (graphs.size() >= kMaxGraphs) graphs.clear();
    graphs.emplace(signature, std::move(traced));
    return result;
  }

  static constexpr size_t kMaxGraphs = 16;
};

FusedForward::FusedForward(const torch::nn::Module& module, std::function<at::Tensor(const at::Tensor&)> forward)
    : impl_(std::make_unique<Impl>()) {
  impl_->module = &module;
  impl_->forward = std::move(forward);
}

FusedForward::~FusedForward() = default;

at::Tensor FusedForward::operator()(const at::Tensor& input) {
  Impl& impl = *impl_;
  if (!at::GradMode::is_enabled() || c10::InferenceMode::is_enabled() || torch::jit::tracer::isTracing() ||
      !input.defined() || !input.device().is_cpu()) {
    impl.last_fused = 0;
    return impl.forward(input);
  }
  const Impl::Signature signature{input.sizes().vec(), static_cast<int>(input.scalar_type()), input.device().str(),
                            input.requires_grad(), impl.module->is_training()};
  std::shared_ptr<const Impl::Traced> traced;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    auto found = impl.graphs.find(signature);
    if (found != impl.graphs.end()) traced = found->second;
  }
  if (!traced) {
    impl.last_fused = 0;
    return impl.Trace(input, signature);
  }
  impl.last_fused = traced->fused;
  if (!traced->code) return impl.forward(input);
  torch::jit::Stack stack{input};
  for (const at::Tensor& tensor : impl.State()) stack.emplace_back(tensor);
  torch::jit::InterpreterState(*traced->code).run(stack);
  return stack.at(0).toTensor();
}

int64_t FusedForward::last_fused_chains() const { return impl_->last_fused; }

}  // namespace est::kernels
