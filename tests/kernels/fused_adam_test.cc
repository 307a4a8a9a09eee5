// FusedAdamStep gives torch::optim::Adam's and AdamW's step() to the bit, keeps their state
// where their own step() and serialization find it, and leaves every other case alone.

#include "kernels/fused_adam.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

#include "common/optimizer_state_key.h"
#include "kernels/fused_adam_internal.h"
#include "tests/kernels/vector_bits.h"

#include <catch2/catch.hpp>

namespace {

// Bit equality, NaN included.
bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const auto x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

// Parameters of awkward sizes (a vector loop's tail, fewer values than one vector, a large
// one split over threads) with values over many magnitudes.
std::vector<torch::Tensor> Parameters(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> parameters;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{3}, {17, 5}, {64, 33}, {70001}, {1}})
    parameters.push_back(torch::randn(shape).mul_(torch::rand(shape).mul_(16).sub_(8).exp2_()));
  return parameters;
}

// Copies of `values` as fresh leaf parameters.
std::vector<torch::Tensor> Leaves(const std::vector<torch::Tensor>& values) {
  std::vector<torch::Tensor> leaves;
  for (const auto& v : values) leaves.push_back(v.detach().clone().requires_grad_(true));
  return leaves;
}

// Gives every parameter of both sets the same gradient (some get none on some steps), with a
// few non-finite values on the last step.
void SetGradients(std::vector<torch::Tensor>& a, std::vector<torch::Tensor>& b, int step, bool nonfinite) {
  for (size_t k = 0; k < a.size(); ++k) {
    if ((step + static_cast<int>(k)) % 4 == 3) {
      a[k].mutable_grad() = torch::Tensor();
      b[k].mutable_grad() = torch::Tensor();
      continue;
    }
    auto grad = torch::randn(a[k].sizes()).mul_(torch::rand(a[k].sizes()).mul_(20).sub_(12).exp2_());
    if (nonfinite && grad.numel() > 2) {
      grad.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
      grad.view(-1)[1] = std::numeric_limits<float>::infinity();
    }
    a[k].mutable_grad() = grad.clone();
    b[k].mutable_grad() = grad;
  }
}

template <typename State>
void RequireSameState(torch::optim::Optimizer& fused, const std::vector<torch::Tensor>& ours,
                      torch::optim::Optimizer& reference, const std::vector<torch::Tensor>& theirs) {
  REQUIRE(fused.state().size() == reference.state().size());
  for (size_t k = 0; k < ours.size(); ++k) {
    INFO("parameter " << k);
    REQUIRE(SameBits(ours[k], theirs[k]));
    using StateMap = std::decay_t<decltype(fused.state())>;
    const auto key = [](const torch::Tensor& t) { return est::OptimizerStateKey<StateMap>(t); };
    const bool has = fused.state().count(key(ours[k])) > 0;
    REQUIRE(has == (reference.state().count(key(theirs[k])) > 0));
    if (!has) continue;
    const auto& a = static_cast<const State&>(*fused.state().at(key(ours[k])));
    const auto& b = static_cast<const State&>(*reference.state().at(key(theirs[k])));
    REQUIRE(a.step() == b.step());
    REQUIRE(SameBits(a.exp_avg(), b.exp_avg()));
    REQUIRE(SameBits(a.exp_avg_sq(), b.exp_avg_sq()));
  }
}

// Steps a fused and a reference optimizer made by `make` side by side and compares them
// after every step; `interleave`: every third fused step is LibTorch's own step().
template <typename Optimizer, typename State, typename Make>
void CompareSteps(Make make, bool interleave, int threads) {
  const int before = at::get_num_threads();
  at::set_num_threads(threads);
  auto values = Parameters(7);
  auto ours = Leaves(values), theirs = Leaves(values);
  Optimizer fused = make(ours);
  Optimizer reference = make(theirs);
  torch::manual_seed(11);
  for (int step = 0; step < 12; ++step) {
    INFO("step " << step);
    SetGradients(ours, theirs, step, step == 11);
    reference.step();
    if (interleave && step % 3 == 2) {
      fused.step();
    } else {
      REQUIRE(est::kernels::FusedAdamStep(fused));
    }
    RequireSameState<State>(fused, ours, reference, theirs);
  }
  at::set_num_threads(before);
}

// Forces the square roots from LibTorch's at::sqrt_out while it lives (where `forced`).
struct SquareRootsFromLibTorch {
  explicit SquareRootsFromLibTorch(bool forced) { est::kernels::detail::SquareRootsFromLibTorch(forced); }
  ~SquareRootsFromLibTorch() { est::kernels::detail::SquareRootsFromLibTorch(false); }
};

}  // namespace

TEST_CASE("FusedAdamStep equals torch::optim::Adam's step bit for bit", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(256, 0);  // its AVX2 loops, then its scalar ones
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  const double decay = GENERATE(0.0, 0.01);
  const int threads = GENERATE(1, 2);
  const bool interleave = GENERATE(false, true);
  const bool libtorch_sqrt = GENERATE(false, true);
  INFO("weight_decay " << decay << ", threads " << threads << ", interleaved " << interleave
                       << ", LibTorch's sqrt forced " << libtorch_sqrt);
  SquareRootsFromLibTorch force(libtorch_sqrt);
  CompareSteps<torch::optim::Adam, torch::optim::AdamParamState>(
      [&](std::vector<torch::Tensor> params) {
        // Two groups with different hyper-parameters.
        std::vector<torch::Tensor> first(params.begin(), params.begin() + 2), rest(params.begin() + 2, params.end());
        std::vector<torch::optim::OptimizerParamGroup> groups;
        groups.emplace_back(first, std::make_unique<torch::optim::AdamOptions>(
                                       torch::optim::AdamOptions(3e-2).betas({0.8, 0.99}).eps(1e-6).weight_decay(decay)));
        groups.emplace_back(rest, std::make_unique<torch::optim::AdamOptions>(
                                      torch::optim::AdamOptions(1e-3).weight_decay(decay)));
        return torch::optim::Adam(std::move(groups));
      },
      interleave, threads);
}

TEST_CASE("FusedAdamStep equals torch::optim::AdamW's step bit for bit", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(256, 0);  // its AVX2 loops, then its scalar ones
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  const double decay = GENERATE(0.0, 0.01, 0.3);
  const bool interleave = GENERATE(false, true);
  const bool libtorch_sqrt = GENERATE(false, true);
  INFO("weight_decay " << decay << ", interleaved " << interleave << ", LibTorch's sqrt forced " << libtorch_sqrt);
  SquareRootsFromLibTorch force(libtorch_sqrt);
  CompareSteps<torch::optim::AdamW, torch::optim::AdamWParamState>(
      [&](std::vector<torch::Tensor> params) {
        return torch::optim::AdamW(params, torch::optim::AdamWOptions(2e-3).weight_decay(decay));
      },
      interleave, 1);
}

TEST_CASE("FusedAdamStep's state is what LibTorch saves and loads", "[kernels]") {
  auto values = Parameters(3);
  auto ours = Leaves(values), theirs = Leaves(values);
  torch::optim::Adam fused(ours, torch::optim::AdamOptions(1e-2));
  torch::optim::Adam reference(theirs, torch::optim::AdamOptions(1e-2));
  torch::manual_seed(5);
  for (int step = 0; step < 3; ++step) {
    SetGradients(ours, theirs, step, false);
    REQUIRE(est::kernels::FusedAdamStep(fused));
    reference.step();
  }
  // Save the fused optimizer's state and load it into a fresh one, as a checkpoint restore does.
  std::ostringstream saved;
  {
    torch::serialize::OutputArchive archive;
    fused.save(archive);
    archive.save_to(saved);
  }
  auto restored = Leaves(std::vector<torch::Tensor>(ours.begin(), ours.end()));
  torch::optim::Adam loaded(restored, torch::optim::AdamOptions(1e-2));
  std::istringstream in(saved.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  loaded.load(archive);
  for (int step = 3; step < 6; ++step) {
    SetGradients(restored, theirs, step, false);
    REQUIRE(est::kernels::FusedAdamStep(loaded));
    reference.step();
  }
  RequireSameState<torch::optim::AdamParamState>(loaded, restored, reference, theirs);
}

namespace {
// An Adam whose step() is the user's own: never replaced.
class CustomAdam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
};
}  // namespace

TEST_CASE("FusedAdamStep leaves other optimizers and tensors to their own step()", "[kernels]") {
  auto check_untouched = [](torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params) {
    std::vector<torch::Tensor> before;
    for (const auto& p : params) before.push_back(p.detach().clone());
    REQUIRE_FALSE(est::kernels::FusedAdamStep(optimizer));
    REQUIRE(optimizer.state().empty());
    for (size_t k = 0; k < params.size(); ++k) REQUIRE(SameBits(params[k], before[k]));
  };
  auto with_grad = [](torch::Tensor p) {
    p.mutable_grad() = torch::ones_like(p);
    return p;
  };
  SECTION("SGD") {
    auto p = with_grad(torch::ones({4}).requires_grad_(true));
    torch::optim::SGD sgd({p}, torch::optim::SGDOptions(0.1).momentum(0.9));
    check_untouched(sgd, {p});
  }
  SECTION("a subclass of Adam") {
    auto p = with_grad(torch::ones({4}).requires_grad_(true));
    CustomAdam adam({p}, torch::optim::AdamOptions(0.1));
    check_untouched(adam, {p});
  }
  SECTION("amsgrad") {
    auto p = with_grad(torch::ones({4}).requires_grad_(true));
    torch::optim::Adam adam({p}, torch::optim::AdamOptions(0.1).amsgrad(true));
    check_untouched(adam, {p});
  }
  SECTION("float64 parameters") {
    auto p = with_grad(torch::ones({4}, torch::kDouble).requires_grad_(true));
    torch::optim::Adam adam({p}, torch::optim::AdamOptions(0.1));
    check_untouched(adam, {p});
  }
  SECTION("a non-contiguous gradient, even beside an eligible parameter") {
    auto good = with_grad(torch::ones({4}).requires_grad_(true));
    auto p = torch::ones({3, 2}).requires_grad_(true);
    p.mutable_grad() = torch::ones({2, 3}).t();
    torch::optim::Adam adam({good, p}, torch::optim::AdamOptions(0.1));
    check_untouched(adam, {good, p});
  }
  SECTION("a sparse gradient") {
    auto p = torch::ones({4}).requires_grad_(true);
    p.mutable_grad() = torch::ones({4}).to_sparse();
    torch::optim::Adam adam({p}, torch::optim::AdamOptions(0.1));
    check_untouched(adam, {p});
  }
}

TEST_CASE("FusedAdamStep: a parameter updated in place is seen by autograd", "[kernels]") {
  auto p = torch::ones({5}).requires_grad_(true);
  p.mutable_grad() = torch::ones({5});
  torch::optim::Adam adam({p}, torch::optim::AdamOptions(0.1));
  const auto version = p._version();
  REQUIRE(est::kernels::FusedAdamStep(adam));
  REQUIRE(p._version() > version);
}

TEST_CASE("FusedAdamStep steps channels-last parameters, and LibTorch's step where layouts differ", "[kernels]") {
  torch::manual_seed(9);
  const auto values = torch::randn({8, 3, 3, 5}).contiguous(torch::MemoryFormat::ChannelsLast);
  auto ours = values.clone().requires_grad_(true);  // clone keeps the layout
  auto theirs = values.clone().requires_grad_(true);
  REQUIRE(ours.is_contiguous(torch::MemoryFormat::ChannelsLast));
  torch::optim::Adam fused({ours}, torch::optim::AdamOptions(1e-2));
  torch::optim::Adam reference({theirs}, torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 4; ++step) {
    const auto grad = torch::randn(values.sizes()).contiguous(torch::MemoryFormat::ChannelsLast);
    ours.mutable_grad() = grad.clone();
    theirs.mutable_grad() = grad.clone();
    REQUIRE(est::kernels::FusedAdamStep(fused));
    reference.step();
    RequireSameState<torch::optim::AdamParamState>(fused, {ours}, reference, {theirs});
  }
  // A contiguous gradient for a channels-last parameter: element i of the two blocks is not
  // the same element, so the fused step declines.
  ours.mutable_grad() = torch::randn(values.sizes());
  REQUIRE_FALSE(est::kernels::FusedAdamStep(fused));
}
