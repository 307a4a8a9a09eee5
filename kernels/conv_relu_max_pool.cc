#include "kernels/conv_relu_max_pool.h"

#include "kernels/blocked_max_pool_internal.h"
#include "kernels/cpu_vectors.h"

#include <ATen/Parallel.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/relu.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#if EST_ONEDNN_MATMUL
#include "kernels/onednn_internal.h"
#endif

namespace est::kernels {
namespace {

// LibTorch's three ops: what ConvReluMaxPool2d computes, where it does not take the arguments
// and for a gradient of the gradient.
at::Tensor ThreeOps(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                    const ConvReluMaxPoolArgs& a) {
  return at::max_pool2d(at::relu(at::conv2d(input, weight, bias, a.stride, a.padding, a.dilation)), a.kernel_size,
                        a.pool_stride, a.pool_padding, a.pool_dilation, a.ceil_mode);
}

#if EST_ONEDNN_MATMUL

// Height and width of a one-or-two-value argument, each at least `least`; false otherwise.
bool PairAtLeast(at::IntArrayRef values, int64_t least, std::array<int64_t, 2>& pair) {
  if (values.size() != 1 && values.size() != 2) return false;
  pair = {values[0], values.back()};
  return pair[0] >= least && pair[1] >= least;
}

// One convolution's shapes and arguments and the thread count: what its primitives are made for.
struct ConvKey {
  std::array<int64_t, 4> input, weight;
  std::array<int64_t, 2> stride, padding, dilation;
  bool bias = false;
  int threads = 0;
  bool operator<(const ConvKey& o) const {
    return std::tie(input, weight, stride, padding, dilation, bias, threads) <
           std::tie(o.input, o.weight, o.stride, o.padding, o.dilation, o.bias, o.threads);
  }
  std::array<int64_t, 2> output() const {  // LibTorch's (and oneDNN's) output height and width
    std::array<int64_t, 2> out{};
    for (int i = 0; i < 2; ++i)
      out[i] = (input[2 + i] + 2 * padding[i] - dilation[i] * (weight[2 + i] - 1) - 1) / stride[i] + 1;
    return out;
  }
};

// oneDNN's forward, weight-gradient and input-gradient primitives of one ConvKey, the output
// (and its gradient) in a blocked layout of `block` channels; none where oneDNN picks another
// layout here (then LibTorch's ops run).
struct ConvPrimitives {
  int block = 0;
  dnnl::memory::desc user_input, user_weight, bias, output;
  std::optional<dnnl::convolution_forward::primitive_desc> forward_pd;
  std::optional<dnnl::convolution_forward> forward;
  std::optional<dnnl::convolution_backward_weights::primitive_desc> weights_pd;
  std::optional<dnnl::convolution_backward_weights> weights;
  std::optional<dnnl::convolution_backward_data::primitive_desc> data_pd;
  std::optional<dnnl::convolution_backward_data> data;

  explicit ConvPrimitives(const ConvKey& key) {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    const auto any = memory::format_tag::any;
    const auto out = key.output();
    const memory::dims input_dims(key.input.begin(), key.input.end());
    const memory::dims weight_dims(key.weight.begin(), key.weight.end());
    const memory::dims output_dims{key.input[0], key.weight[0], out[0], out[1]};
    const memory::dims strides{key.stride[0], key.stride[1]};
    const memory::dims dilates{key.dilation[0] - 1, key.dilation[1] - 1};  // oneDNN's count from 0
    const memory::dims padding{key.padding[0], key.padding[1]};
    user_input = memory::desc(input_dims, f32, memory::format_tag::nchw);
    user_weight = memory::desc(weight_dims, f32, memory::format_tag::oihw);
    if (key.bias) bias = memory::desc({key.weight[0]}, f32, memory::format_tag::x);
    const memory::desc any_input(input_dims, f32, any), any_weight(weight_dims, f32, any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto direct = dnnl::algorithm::convolution_direct;
    const dnnl::engine& engine = detail::OneDnnEngine();
    try {
      const dnnl::convolution_forward::desc forward_desc(dnnl::prop_kind::forward_training, direct, any_input,
                                                         any_weight, bias, memory::desc(output_dims, f32, any),
                                                         strides, dilates, padding, padding);
      dnnl::convolution_forward::primitive_desc fpd(forward_desc, attr, engine);
      for (const auto& [tag, lanes] : {std::pair{memory::format_tag::nChw16c, 16}, {memory::format_tag::nChw8c, 8}})
        if (fpd.dst_desc() == memory::desc(output_dims, f32, tag)) block = lanes;
      if (block == 0) return;
      output = fpd.dst_desc();
      const dnnl::convolution_backward_weights::desc weights_desc(direct, any_input, any_weight, bias, output,
                                                                  strides, dilates, padding, padding);
      dnnl::convolution_backward_weights::primitive_desc wpd(weights_desc, attr, engine, fpd);
      const dnnl::convolution_backward_data::desc data_desc(direct, any_input, any_weight, output, strides, dilates,
                                                            padding, padding);
      dnnl::convolution_backward_data::primitive_desc dpd(data_desc, attr, engine, fpd);
      if (wpd.diff_dst_desc() != output || dpd.diff_dst_desc() != output) {
        block = 0;
        return;
      }
      forward_pd = fpd;
      forward.emplace(fpd);
      weights_pd = wpd;
      weights.emplace(wpd);
      data_pd = dpd;
      data.emplace(dpd);
    } catch (const dnnl::error&) {
      block = 0;  // not implemented for these arguments here: LibTorch's ops compute them
    }
  }
};

// The primitives made so far, as MatmulCache keeps its products (cleared past kMaxConvolutions).
class ConvCache {
 public:
  static ConvCache& Get() {
    static auto* cache = new ConvCache;  // never destroyed: other threads may run at exit
    return *cache;
  }

  std::shared_ptr<const ConvPrimitives> Find(const ConvKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = convolutions_.find(key);
    if (found != convolutions_.end()) return found->second;
    if (convolutions_.size() >= kMaxConvolutions) convolutions_.clear();
    return convolutions_.emplace(key, std::make_shared<const ConvPrimitives>(key)).first->second;
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    convolutions_.clear();
  }

 private:
  static constexpr size_t kMaxConvolutions = 64;
  std::mutex mutex_;
  std::map<ConvKey, std::shared_ptr<const ConvPrimitives>> convolutions_;
};

// Everything ConvReluMaxPool2d needs to take a call: the convolution's key and primitives, the
// pooling's geometry; nullopt where it does not take it.
struct Plan {
  ConvKey key;
  std::shared_ptr<const ConvPrimitives> conv;
  detail::PoolGeometry pool;
  detail::BlockedShape shape() const { return {key.input[0], key.weight[0], conv->block}; }
};

bool IsContiguous4dFloat(const at::Tensor& t) {
  return detail::IsCpuFloat(t) && t.dim() == 4 && t.is_contiguous() && !t.is_neg() && !t.is_conj();
}

// The plan for these tensors' shapes and layouts and these arguments (the call's context, such
// as autocast, is TakesCall's).
std::optional<Plan> PlanFor(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            const ConvReluMaxPoolArgs& args) {
  if (!IsContiguous4dFloat(input) || !IsContiguous4dFloat(weight)) return std::nullopt;
  if (input.size(1) != weight.size(1) || input.numel() == 0 || weight.numel() == 0) return std::nullopt;
  if (bias.defined() && !(detail::IsCpuFloat(bias) && bias.dim() == 1 && bias.size(0) == weight.size(0) &&
                          bias.is_contiguous()))
    return std::nullopt;
  Plan plan;
  ConvKey& key = plan.key;
  if (!PairAtLeast(args.stride, 1, key.stride) || !PairAtLeast(args.padding, 0, key.padding) ||
      !PairAtLeast(args.dilation, 1, key.dilation))
    return std::nullopt;
  for (int i = 0; i < 4; ++i) {
    key.input[i] = input.size(i);
    key.weight[i] = weight.size(i);
  }
  key.bias = bias.defined();
  key.threads = at::get_num_threads();
  for (int i = 0; i < 2; ++i)
    if (key.input[2 + i] + 2 * key.padding[i] - key.dilation[i] * (key.weight[2 + i] - 1) - 1 < 0) return std::nullopt;
  const auto out = key.output();
  const std::vector<int64_t> conv_sizes{key.input[0], key.weight[0], out[0], out[1]};
  const auto pool = detail::PoolGeometryOf(conv_sizes, args.kernel_size, args.pool_stride, args.pool_padding,
                                           args.pool_dilation, args.ceil_mode);
  if (!pool || !detail::BlockedPoolFits(*pool)) return std::nullopt;
  plan.pool = *pool;
  plan.conv = ConvCache::Get().Find(key);
  if (plan.conv->block == 0) return std::nullopt;
  return plan;
}

// The plan of a call ConvReluMaxPool2d computes itself: none under CPU autocast (which LibTorch's
// ops follow) or for forward-mode gradients.
std::optional<Plan> PlanCall(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                             const ConvReluMaxPoolArgs& args) {
  if (detail::CpuAutocastEnabled() || detail::InJitTrace()) return std::nullopt;
  for (const at::Tensor* t : {&input, &weight, &bias})
    if (t->defined() && t->_fw_grad(/*level=*/0).defined()) return std::nullopt;
  return PlanFor(input, weight, bias, args);
}

// `tensor`'s values as oneDNN memory of `wanted`: the tensor's own memory where `wanted` is its
// layout `given`, else a reordered copy (kept alive in `keep`).
dnnl::memory AsLayout(const at::Tensor& tensor, const dnnl::memory::desc& given, const dnnl::memory::desc& wanted,
                      at::Tensor& keep) {
  dnnl::memory user = detail::OneDnnMemory(given, tensor.data_ptr());
  if (given == wanted) return user;
  keep = detail::EmptyFor(wanted);
  dnnl::memory copy = detail::OneDnnMemory(wanted, keep.data_ptr());
  detail::Reorder(user, copy);
  return copy;
}

// Writes oneDNN memory `result` (layout `produced`) into the contiguous tensor `out` (`given`).
void IntoTensor(const dnnl::memory& result, const dnnl::memory::desc& produced, const dnnl::memory::desc& given,
                at::Tensor& out) {
  if (produced != given) detail::Reorder(result, detail::OneDnnMemory(given, out.data_ptr()));
}

// Memory of `wanted` for a primitive's result: `out`'s own where its layout `given` is
// `wanted`, else new bytes (kept in `keep`) for IntoTensor to reorder.
dnnl::memory ResultMemory(at::Tensor& out, const dnnl::memory::desc& given, const dnnl::memory::desc& wanted,
                          at::Tensor& keep) {
  if (given == wanted) return detail::OneDnnMemory(given, out.data_ptr());
  keep = detail::EmptyFor(wanted);
  return detail::OneDnnMemory(wanted, keep.data_ptr());
}

// The pooled output [N, C, OH, OW] and the winners' codes of the plan's convolution, relu and
// max-pool.
std::pair<at::Tensor, at::Tensor> Forward(const Plan& plan, const at::Tensor& input, const at::Tensor& weight,
                                          const at::Tensor& bias) {
  const ConvPrimitives& conv = *plan.conv;
  at::Tensor input_copy, weight_copy;
  at::Tensor output = detail::EmptyFor(conv.output);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, AsLayout(input, conv.user_input, conv.forward_pd->src_desc(), input_copy)},
      {DNNL_ARG_WEIGHTS, AsLayout(weight, conv.user_weight, conv.forward_pd->weights_desc(), weight_copy)},
      {DNNL_ARG_DST, detail::OneDnnMemory(conv.output, output.data_ptr())}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, detail::OneDnnMemory(conv.bias, bias.data_ptr()));
  detail::RunOneDnn(*conv.forward, conv.forward_pd->scratchpad_desc(), std::move(args));
  const detail::PoolGeometry& g = plan.pool;
  const detail::BlockedShape shape = plan.shape();
  at::Tensor pooled = at::empty({shape.batch, shape.channels, g.out_height, g.out_width}, input.options());
  at::Tensor codes =
      at::empty({shape.batch * shape.blocks() * g.out_height * g.out_width * shape.block}, input.options().dtype(at::kByte));
  detail::ReluMaxPoolBlocked(static_cast<const float*>(output.data_ptr()), shape, g, pooled.data_ptr<float>(),
                             codes.data_ptr<uint8_t>());
  return {pooled, codes};
}

// The gradients of input, weight and bias (each where `needed`) from the pooled output's.
std::array<at::Tensor, 3> Backward(const Plan& plan, const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& codes, const at::Tensor& grad_pooled,
                                   std::array<bool, 3> needed) {
  const ConvPrimitives& conv = *plan.conv;
  const at::Tensor grad = grad_pooled.contiguous();
  at::Tensor grad_output = detail::EmptyFor(conv.output);
  detail::ReluMaxPoolBlockedBackward(grad.data_ptr<float>(), codes.data_ptr<uint8_t>(), plan.shape(), plan.pool,
                                     static_cast<float*>(grad_output.data_ptr()));
  const dnnl::memory diff_dst = detail::OneDnnMemory(conv.output, grad_output.data_ptr());
  std::array<at::Tensor, 3> grads;
  if (needed[1] || needed[2]) {
    const auto& pd = *conv.weights_pd;
    at::Tensor input_copy, weight_keep;
    grads[1] = at::empty(weight.sizes(), weight.options());
    dnnl::memory diff_weights = ResultMemory(grads[1], conv.user_weight, pd.diff_weights_desc(), weight_keep);
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, AsLayout(input, conv.user_input, pd.src_desc(), input_copy)},
        {DNNL_ARG_DIFF_DST, diff_dst},
        {DNNL_ARG_DIFF_WEIGHTS, diff_weights}};
    if (plan.key.bias) {
      grads[2] = at::empty({plan.key.weight[0]}, weight.options());
      args.emplace(DNNL_ARG_DIFF_BIAS, detail::OneDnnMemory(conv.bias, grads[2].data_ptr()));
    }
    detail::RunOneDnn(*conv.weights, pd.scratchpad_desc(), std::move(args));
    IntoTensor(diff_weights, pd.diff_weights_desc(), conv.user_weight, grads[1]);
  }
  if (needed[0]) {
    const auto& pd = *conv.data_pd;
    at::Tensor weight_copy, input_keep;
    grads[0] = at::empty(input.sizes(), input.options());
    dnnl::memory diff_src = ResultMemory(grads[0], conv.user_input, pd.diff_src_desc(), input_keep);
    detail::RunOneDnn(*conv.data, pd.scratchpad_desc(),
                      {{DNNL_ARG_WEIGHTS, AsLayout(weight, conv.user_weight, pd.weights_desc(), weight_copy)},
                       {DNNL_ARG_DIFF_DST, diff_dst},
                       {DNNL_ARG_DIFF_SRC, diff_src}});
    IntoTensor(diff_src, pd.diff_src_desc(), conv.user_input, grads[0]);
  }
  if (!needed[1]) grads[1] = at::Tensor();
  return grads;
}

// The arguments as the autograd function keeps them (its saved data holds values, not structs).
std::vector<int64_t> Flatten(const ConvReluMaxPoolArgs& a) {
  std::vector<int64_t> flat;
  for (const std::vector<int64_t>* list : {&a.stride, &a.padding, &a.dilation, &a.kernel_size, &a.pool_stride,
                                           &a.pool_padding, &a.pool_dilation}) {
    flat.push_back(static_cast<int64_t>(list->size()));
    flat.insert(flat.end(), list->begin(), list->end());
  }
  flat.push_back(a.ceil_mode ? 1 : 0);
  return flat;
}

ConvReluMaxPoolArgs Unflatten(const std::vector<int64_t>& flat) {
  ConvReluMaxPoolArgs a;
  size_t at = 0;
  for (std::vector<int64_t>* list : {&a.stride, &a.padding, &a.dilation, &a.kernel_size, &a.pool_stride,
                                     &a.pool_padding, &a.pool_dilation}) {
    const auto size = static_cast<size_t>(flat.at(at));
    list->assign(flat.begin() + at + 1, flat.begin() + at + 1 + size);
    at += size + 1;
  }
  a.ceil_mode = flat.at(at) != 0;
  return a;
}

struct ConvReluMaxPoolFunction : torch::autograd::Function<ConvReluMaxPoolFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias_or_empty, const ConvReluMaxPoolArgs& args) {
    const at::Tensor bias = bias_or_empty.numel() > 0 ? bias_or_empty : at::Tensor();
    const std::optional<Plan> plan = PlanFor(input, weight, bias, args);
    TORCH_INTERNAL_ASSERT(plan, "ConvReluMaxPool2d: planned arguments no longer planned");
    auto [pooled, codes] = Forward(*plan, input, weight, bias);
    ctx->save_for_backward({input, weight, bias_or_empty});
    ctx->saved_data["codes"] = codes;
    ctx->saved_data["args"] = Flatten(args);
    return pooled;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor bias = saved[2].numel() > 0 ? saved[2] : at::Tensor();
    const ConvReluMaxPoolArgs args = Unflatten(ctx->saved_data["args"].toIntVector());
    const std::array<bool, 3> needed{ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                     ctx->needs_input_grad(2) && bias.defined()};
    const std::optional<Plan> plan = PlanFor(input, weight, bias, args);
    // create_graph, or oneDNN refusing the thread count the backward runs with.
    if (at::GradMode::is_enabled() || !plan) return ThreeOpsBackward(input, weight, bias, args, grads[0], needed);
    auto result = Backward(*plan, input, weight, ctx->saved_data["codes"].toTensor(), grads[0], needed);
    return {result[0], result[1], result[2], at::Tensor()};
  }

  // The gradients through LibTorch's three ops, run again (differentiable for create_graph).
  static torch::autograd::tensor_list ThreeOpsBackward(const at::Tensor& input, const at::Tensor& weight,
                                                             const at::Tensor& bias, const ConvReluMaxPoolArgs& args,
                                                             const at::Tensor& grad, std::array<bool, 3> needed) {
    std::vector<at::Tensor> sources, wanted(3);
    const std::array<at::Tensor, 3> inputs{input, weight, bias};
    std::vector<int> slots;
    for (int i = 0; i < 3; ++i)
      if (needed[i]) {
        sources.push_back(inputs[i]);
        slots.push_back(i);
      }
    if (sources.empty()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    const bool create_graph = at::GradMode::is_enabled();
    at::AutoGradMode enabled(true);
    const at::Tensor output = ThreeOps(input, weight, bias, args);
    const auto computed = torch::autograd::grad({output}, sources, {grad}, /*retain_graph=*/create_graph,
                                                create_graph, /*allow_unused=*/true);
    for (size_t i = 0; i < slots.size(); ++i) wanted[slots[i]] = computed[i];
    return {wanted[0], wanted[1], wanted[2], at::Tensor()};
  }
};

#endif  // EST_ONEDNN_MATMUL

}  // namespace

int detail::ConvReluMaxPool2dBlock(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                                   const ConvReluMaxPoolArgs& args) {
#if EST_ONEDNN_MATMUL
  const std::optional<Plan> plan = PlanCall(input, weight, bias, args);
  return plan ? plan->conv->block : 0;
#else
  (void)input, (void)weight, (void)bias, (void)args;
  return 0;
#endif
}

bool detail::LimitOneDnnToAvx2() {
#if EST_ONEDNN_MATMUL
  try {
    dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
    ConvCache::Get().Clear();  // primitives made for the wider ISA
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
#else
  return false;
#endif
}

bool ConvReluMaxPool2dTakes(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            const ConvReluMaxPoolArgs& args) {
  return detail::ConvReluMaxPool2dBlock(input, weight, bias, args) != 0;
}

at::Tensor ConvReluMaxPool2d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                             const ConvReluMaxPoolArgs& args) {
#if EST_ONEDNN_MATMUL
  if (PlanCall(input, weight, bias, args))
    return ConvReluMaxPoolFunction::apply(input, weight, detail::BiasOrEmpty(bias, weight), args);
#endif
  return ThreeOps(input, weight, bias, args);
}

}  // namespace est::kernels
