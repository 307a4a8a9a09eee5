// Compiled with -ffp-contract=off (kernels/CMakeLists.txt): every fused multiply-add below
// is written out, so that the compiler adds none of its own and the rounding is LibTorch's.
#include "kernels/fused_adam.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "common/optimizer_state_key.h"
#include "kernels/cpu_vectors.h"
#include "kernels/fused_adam_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace est::kernels {
namespace {

// The per-step scalars, rounded to float as LibTorch's kernels round them.
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias_correction2;  ///< sqrt(1 - beta2^step)
  float eps;
  float negative_step_size;  ///< -lr / (1 - beta1^step)
  float weight_decay;        ///< Adam: added to the gradient as weight_decay * parameter
  float decay_factor;        ///< AdamW: the parameter is first multiplied by 1 - lr * weight_decay
  bool adam_decay, adamw_decay;
};

// The hyper-parameters of one parameter group; Adam and AdamW have the same ones.
struct Hyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool adamw;
};

AdamScalars ScalarsFor(const Hyper& h, int64_t step) {
  const double bias_correction1 = 1 - std::pow(h.beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(h.beta2, static_cast<double>(step));
  AdamScalars s{};
  s.beta1 = static_cast<float>(h.beta1);
  s.one_minus_beta1 = static_cast<float>(1 - h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.one_minus_beta2 = static_cast<float>(1 - h.beta2);
  s.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
  s.eps = static_cast<float>(h.eps);
  s.negative_step_size = static_cast<float>(-(h.lr / bias_correction1));
  s.weight_decay = static_cast<float>(h.weight_decay);
  s.decay_factor = static_cast<float>(1 - h.lr * h.weight_decay);
  s.adam_decay = !h.adamw && h.weight_decay != 0;
  s.adamw_decay = h.adamw && h.weight_decay != 0;
  return s;
}

// Where the step takes exp_avg_sq's square root from. Debian's LibTorch takes IEEE's
// correctly rounded square root, which the kernel takes in its registers; builds whose
// at::sqrt runs MKL's vector math (pip and archive LibTorch) round about one result in six
// differently, so there the kernel runs LibTorch's own at::sqrt_out on each chunk of the
// second moment, between a pass that updates the moments and one that updates the parameter.
enum class SqrtSource { kRegisters, kLibTorch };

std::atomic<bool> libtorch_sqrt_forced{false};  // detail::SquareRootsFromLibTorch

// One element in LibTorch's order of operations. First the decays and the moments:
// grad.add(p, weight_decay) (Adam) or p.mul_(1 - lr * weight_decay) (AdamW);
// exp_avg.mul_(beta1).add_(grad, 1 - beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad,
// 1 - beta2) (both a fused multiply-add in LibTorch's vectorized kernels).
inline void MomentsElement(const AdamScalars& s, float& p, float g, float& m, float& v) {
  if (s.adam_decay) g = std::fma(p, s.weight_decay, g);
  if (s.adamw_decay) p = p * s.decay_factor;
  m = std::fma(g, s.one_minus_beta1, m * s.beta1);
  v = std::fma(s.one_minus_beta2 * g, g, v * s.beta2);
}

// Then the parameter, from `root` = sqrt(exp_avg_sq): denom = root / sqrt(bias_correction2)
// + eps; param.addcdiv_(exp_avg, denom, -step_size).
inline void ApplyElement(const AdamScalars& s, float& p, float m, float root) {
  const float denom = root / s.sqrt_bias_correction2 + s.eps;
  p = p + (s.negative_step_size * m) / denom;
}

// The loops below take `n` elements from the pointers on. The moments, and where kApply the
// parameter too, with the square roots taken in registers.
template <bool kApply>
void MomentsScalar(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    MomentsElement(s, p[i], g[i], m[i], v[i]);
    if constexpr (kApply) ApplyElement(s, p[i], m[i], std::sqrt(v[i]));
  }
}
void ApplyScalar(const AdamScalars& s, float* p, const float* m, const float* root, int64_t n) {
  for (int64_t i = 0; i < n; ++i) ApplyElement(s, p[i], m[i], root[i]);
}

#if defined(__x86_64__)
#define EST_AVX2_FMA __attribute__((target("avx2,fma")))

// AdamScalars broadcast to eight lanes.
struct Avx2Scalars {
  __m256 beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bc2, eps, step, decay, factor;
};

EST_AVX2_FMA inline Avx2Scalars Broadcast(const AdamScalars& s) {
  return {_mm256_set1_ps(s.beta1),
          _mm256_set1_ps(s.one_minus_beta1),
          _mm256_set1_ps(s.beta2),
          _mm256_set1_ps(s.one_minus_beta2),
          _mm256_set1_ps(s.sqrt_bias_correction2),
          _mm256_set1_ps(s.eps),
          _mm256_set1_ps(s.negative_step_size),
          _mm256_set1_ps(s.weight_decay),
          _mm256_set1_ps(s.decay_factor)};
}

// MomentsElement and ApplyElement on eight lanes.
EST_AVX2_FMA inline void MomentsVector(const AdamScalars& s, const Avx2Scalars& k, __m256& p, __m256 g, __m256& m,
                                       __m256& v) {
  if (s.adam_decay) g = _mm256_fmadd_ps(p, k.decay, g);
  if (s.adamw_decay) p = _mm256_mul_ps(p, k.factor);
  m = _mm256_fmadd_ps(g, k.one_minus_beta1, _mm256_mul_ps(m, k.beta1));
  v = _mm256_fmadd_ps(_mm256_mul_ps(k.one_minus_beta2, g), g, _mm256_mul_ps(v, k.beta2));
}
EST_AVX2_FMA inline __m256 ApplyVector(const Avx2Scalars& k, __m256 p, __m256 m, __m256 root) {
  const __m256 denom = _mm256_add_ps(_mm256_div_ps(root, k.sqrt_bc2), k.eps);
  return _mm256_add_ps(p, _mm256_div_ps(_mm256_mul_ps(k.step, m), denom));
}

template <bool kApply>
EST_AVX2_FMA void MomentsAvx2(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n) {
  const Avx2Scalars k = Broadcast(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 pv = _mm256_loadu_ps(p + i), mv = _mm256_loadu_ps(m + i), vv = _mm256_loadu_ps(v + i);
    MomentsVector(s, k, pv, _mm256_loadu_ps(g + i), mv, vv);
    _mm256_storeu_ps(m + i, mv);
    _mm256_storeu_ps(v + i, vv);
    if constexpr (kApply) pv = ApplyVector(k, pv, mv, _mm256_sqrt_ps(vv));
    _mm256_storeu_ps(p + i, pv);
  }
  MomentsScalar<kApply>(s, p + i, g + i, m + i, v + i, n - i);
}
EST_AVX2_FMA void ApplyAvx2(const AdamScalars& s, float* p, const float* m, const float* root, int64_t n) {
  const Avx2Scalars k = Broadcast(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(p + i, ApplyVector(k, _mm256_loadu_ps(p + i), _mm256_loadu_ps(m + i), _mm256_loadu_ps(root + i)));
  ApplyScalar(s, p + i, m + i, root + i, n - i);
}
#undef EST_AVX2_FMA

bool HasAvx2Fma() { return detail::UsableVectorBits() >= 256; }
#endif

template <bool kApply>
void Moments(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n) {
#if defined(__x86_64__)
  if (HasAvx2Fma()) return MomentsAvx2<kApply>(s, p, g, m, v, n);
#endif
  MomentsScalar<kApply>(s, p, g, m, v, n);
}
void Apply(const AdamScalars& s, float* p, const float* m, const float* root, int64_t n) {
#if defined(__x86_64__)
  if (HasAvx2Fma()) return ApplyAvx2(s, p, m, root, n);
#endif
  ApplyScalar(s, p, m, root, n);
}

// The elements [0, n) with the square roots from LibTorch's at::sqrt_out, in chunks that keep
// the four arrays in the cache from the first pass to the second.
constexpr int64_t kChunk = 4096;
void AdamWithLibTorchSqrt(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n) {
  thread_local std::vector<float> root(kChunk);
  const at::Tensor root_tensor = at::from_blob(root.data(), {kChunk}, at::kFloat);
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t count = std::min(kChunk, n - begin);
    Moments<false>(s, p + begin, g + begin, m + begin, v + begin, count);
    at::Tensor out = root_tensor.narrow(0, 0, count);
    at::sqrt_out(out, at::from_blob(v + begin, {count}, at::kFloat));
    Apply(s, p + begin, m + begin, root.data(), count);
  }
}

// Updates `count` elements, split over LibTorch's intra-op threads as its own kernels are.
void AdamRange(const AdamScalars& s, SqrtSource source, float* p, const float* g, float* m, float* v,
               int64_t count) {
  at::parallel_for(0, count, at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
    if (source == SqrtSource::kLibTorch)
      return AdamWithLibTorchSqrt(s, p + begin, g + begin, m + begin, v + begin, end - begin);
    Moments<true>(s, p + begin, g + begin, m + begin, v + begin, end - begin);
  });
}

// A float32 CPU tensor whose elements fill one block of memory (contiguous, channels-last
// or any other dense layout); `like`: one laid out as it is, element for element.
bool IsDenseFloatCpu(const at::Tensor& t) {
  return t.defined() && t.layout() == at::kStrided && t.device().is_cpu() && t.scalar_type() == at::kFloat &&
         t.is_non_overlapping_and_dense();
}
bool IsLaidOutLike(const at::Tensor& t, const at::Tensor& like) {
  return IsDenseFloatCpu(t) && t.sizes() == like.sizes() && t.strides() == like.strides();
}

// The key under which LibTorch's Adam and AdamW keep a parameter's state.
using StateMap = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;
StateMap::key_type StateKey(const at::Tensor& parameter) { return OptimizerStateKey<StateMap>(parameter); }

template <typename Options>
Hyper HyperOf(const Options& o, bool adamw) {
  return Hyper{o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(), adamw};
}

// Whether `optimizer` (an Adam or AdamW: `State` is its parameter state, `Options` its group
// options) can step fused: amsgrad off, and every parameter that has a gradient a dense
// float32 CPU tensor, its gradient and its state (where it has one yet) laid out as it is.
template <typename State, typename Options>
bool Eligible(torch::optim::Optimizer& optimizer) {
  const auto& states = optimizer.state();
  for (auto& group : optimizer.param_groups()) {
    if (static_cast<const Options&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      if (!IsDenseFloatCpu(p) || !IsLaidOutLike(grad, p)) return false;
      auto found = states.find(StateKey(p));
      if (found == states.end()) continue;
      const auto* state = dynamic_cast<const State*>(found->second.get());
      if (!state || !IsLaidOutLike(state->exp_avg(), p) || !IsLaidOutLike(state->exp_avg_sq(), p)) return false;
    }
  }
  return true;
}

// Steps an eligible `optimizer` in one fused pass per parameter (two with kLibTorch).
template <typename State, typename Options>
void FusedStep(torch::optim::Optimizer& optimizer, bool adamw, SqrtSource source, const ParameterFilter& include) {
  auto& states = optimizer.state();
  at::NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    const Hyper hyper = HyperOf(static_cast<const Options&>(group.options()), adamw);
    for (auto& p : group.params()) {
      const at::Tensor& grad = p.grad();
      if (!grad.defined() || (include && !include(p))) continue;
      const auto key = StateKey(p);
      auto found = states.find(key);
      if (found == states.end()) {
        auto state = std::make_unique<State>();
        state->step(0);
        state->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        state->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        found = states.emplace(key, std::move(state)).first;
      }
      auto& state = static_cast<State&>(*found->second);
      state.step(state.step() + 1);
      const AdamScalars scalars = ScalarsFor(hyper, state.step());
      AdamRange(scalars, source, p.data_ptr<float>(), grad.data_ptr<float>(),
                state.exp_avg().template data_ptr<float>(), state.exp_avg_sq().template data_ptr<float>(), p.numel());
      // In-place updates as LibTorch's own: autograd must see that the tensors changed.
      p.unsafeGetTensorImpl()->bump_version();
      state.exp_avg().unsafeGetTensorImpl()->bump_version();
      state.exp_avg_sq().unsafeGetTensorImpl()->bump_version();
    }
  }
}

// Runs LibTorch's step and the fused one (its square roots from `source`) in turn on the same
// probe values (two chunks and an odd rest, so the vector loop's tail runs; magnitudes from
// 2^-10 to 2^10; the first step creates the state in one and the next finds it in the other)
// and compares every bit of the results.
template <typename Optimizer, typename State, typename Options>
bool MatchesLibTorch(const Options& options, bool adamw, SqrtSource source) {
  at::NoGradGuard no_grad;
  const int64_t numel = 2 * kChunk + 7;
  auto generator = at::detail::createCPUGenerator(20261127);
  const auto magnitudes = [&] { return at::rand({numel}, generator).mul_(20).sub_(10).exp2_(); };
  at::Tensor values = at::randn({numel}, generator).mul_(magnitudes());
  at::Tensor ours = values.clone().requires_grad_(true);
  at::Tensor theirs = values.clone().requires_grad_(true);
  Optimizer fused({ours}, options);
  Optimizer reference({theirs}, options);
  for (int step = 0; step < 4; ++step) {
    const at::Tensor grad = at::randn({numel}, generator).mul_(magnitudes());
    ours.mutable_grad() = grad.clone();
    theirs.mutable_grad() = grad.clone();
    reference.step();
    if (step % 2 == 0) {
      FusedStep<State, Options>(fused, adamw, source, nullptr);
    } else {
      fused.step();  // LibTorch's step must find the state the fused one made, and vice versa
    }
    const auto& a = static_cast<const State&>(*fused.state().at(StateKey(ours)));
    const auto& b = static_cast<const State&>(*reference.state().at(StateKey(theirs)));
    const auto same = [&](const at::Tensor& x, const at::Tensor& y) {
      return std::memcmp(x.data_ptr<float>(), y.data_ptr<float>(), sizeof(float) * numel) == 0;
    };
    if (a.step() != b.step() || !same(ours, theirs) || !same(a.exp_avg(), b.exp_avg()) ||
        !same(a.exp_avg_sq(), b.exp_avg_sq()))
      return false;
  }
  return true;
}

// Where the fused step takes square roots from so that it reproduces LibTorch's step (the
// registers where that does, else LibTorch's sqrt), or nothing where neither does; probed
// once per path through the kernel: Adam or AdamW, with weight decay or without. How the two
// round does not depend on the hyper-parameters' values (both round the same double scalars
// to float the same way), so a learning-rate schedule probes nothing more.
template <typename Optimizer, typename State, typename Options>
std::optional<SqrtSource> Verified(const Options& options, bool adamw) {
  static std::mutex mutex;
  // (weight decay on, LibTorch's sqrt forced) -> verdict, per optimizer type
  static std::map<std::pair<bool, bool>, std::optional<SqrtSource>> verdicts;
  const Hyper hyper = HyperOf(options, adamw);
  const bool decay = hyper.weight_decay != 0;
  const bool forced = libtorch_sqrt_forced.load();
  std::lock_guard<std::mutex> lock(mutex);
  auto found = verdicts.find({decay, forced});
  if (found != verdicts.end()) return found->second;
  std::optional<SqrtSource> verdict;
  for (const SqrtSource source : {SqrtSource::kRegisters, SqrtSource::kLibTorch}) {
    if (forced && source == SqrtSource::kRegisters) continue;
    if (MatchesLibTorch<Optimizer, State>(options, adamw, source)) {
      verdict = source;
      break;
    }
  }
  if (!verdict)
    Log().warn("The fused {} step does not reproduce this LibTorch's step() bit for bit (probed with lr {}, betas {} "
               "{}, eps {}, weight_decay {}); {}::step() runs instead",
               adamw ? "AdamW" : "Adam", hyper.lr, hyper.beta1, hyper.beta2, hyper.eps, hyper.weight_decay,
               adamw ? "AdamW" : "Adam");
  verdicts.emplace(std::make_pair(decay, forced), verdict);
  return verdict;
}

template <typename Optimizer, typename State, typename Options>
bool VerifiedFusedStep(torch::optim::Optimizer& optimizer, bool adamw, const ParameterFilter& include) {
  if (!Eligible<State, Options>(optimizer)) return false;
  std::optional<SqrtSource> source;
  for (const auto& group : optimizer.param_groups()) {
    const auto verdict = Verified<Optimizer, State>(static_cast<const Options&>(group.options()), adamw);
    if (!verdict) return false;
    // Groups with and without weight decay may have probed differently; LibTorch's sqrt
    // matches wherever the registers' does.
    if (!source || *verdict == SqrtSource::kLibTorch) source = verdict;
  }
  FusedStep<State, Options>(optimizer, adamw, source.value_or(SqrtSource::kRegisters), include);
  return true;
}

}  // namespace

namespace detail {
void SquareRootsFromLibTorch(bool forced) { libtorch_sqrt_forced.store(forced); }
}  // namespace detail

bool FusedAdamStep(torch::optim::Optimizer& optimizer, const ParameterFilter& include) {
  const std::type_info& type = typeid(optimizer);
  if (type == typeid(torch::optim::Adam))
    return VerifiedFusedStep<torch::optim::Adam, torch::optim::AdamParamState, torch::optim::AdamOptions>(
        optimizer, false, include);
  if (type == typeid(torch::optim::AdamW))
    return VerifiedFusedStep<torch::optim::AdamW, torch::optim::AdamWParamState, torch::optim::AdamWOptions>(
        optimizer, true, include);
  return false;
}

}  // namespace est::kernels
