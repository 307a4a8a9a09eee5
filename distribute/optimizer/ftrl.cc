#include "distribute/optimizer/ftrl.h"

#include <ATen/Parallel.h>
#include <torch/optim/serialize.h>

#include <algorithm>

#include "common/error.h"
#include "common/optimizer_state_key.h"

namespace est::optim {
namespace {

/// ConfigError naming the first option of `options` out of its range. The conditions hold for
/// no NaN.
void ValidateFtrlOptions(const FtrlOptions& options) {
  EST_CHECK(options.lr() > 0, ConfigError, "Ftrl option lr is ", options.lr(),
            "; expected > 0 (TensorFlow's ApplyFtrl divides by it)");
  EST_CHECK(options.learning_rate_power() <= 0, ConfigError, "Ftrl option learning_rate_power is ",
            options.learning_rate_power(), "; expected <= 0 (0 for a fixed learning rate)");
  EST_CHECK(options.initial_accumulator_value() >= 0, ConfigError, "Ftrl option initial_accumulator_value is ",
            options.initial_accumulator_value(), "; expected >= 0");
  EST_CHECK(options.l1() >= 0, ConfigError, "Ftrl option l1 is ", options.l1(), "; expected >= 0");
  EST_CHECK(options.l2() >= 0, ConfigError, "Ftrl option l2 is ", options.l2(), "; expected >= 0");
  EST_CHECK(options.l2_shrinkage() >= 0, ConfigError, "Ftrl option l2_shrinkage is ", options.l2_shrinkage(),
            "; expected >= 0");
  EST_CHECK(options.beta() >= 0, ConfigError, "Ftrl option beta is ", options.beta(), "; expected >= 0");
}

/// The scalars of one update, computed in the variable's dtype as TensorFlow computes them, and
/// held as doubles (exactly: a float's value is a double's).
struct FtrlScalars {
  double lr = 0;
  double l1 = 0;
  double two_l2 = 0;            ///< 2·(l2 + beta / (2·lr)): Keras folds beta into l2
  double two_l2_shrinkage = 0;  ///< 2·l2_shrinkage
  double power = 0;             ///< -learning_rate_power
  bool root = false;            ///< learning_rate_power is -0.5: square roots, not powers
};

template <typename T>
FtrlScalars RoundFtrlScalars(const FtrlOptions& options) {
  const T lr = static_cast<T>(options.lr());
  const T l2 = static_cast<T>(options.l2()) + static_cast<T>(options.beta()) / (static_cast<T>(2) * lr);
  FtrlScalars scalars;
  scalars.lr = lr;
  scalars.l1 = static_cast<T>(options.l1());
  scalars.two_l2 = static_cast<T>(2) * l2;
  scalars.two_l2_shrinkage = static_cast<T>(2) * static_cast<T>(options.l2_shrinkage());
  scalars.power = -static_cast<T>(options.learning_rate_power());
  scalars.root = static_cast<T>(options.learning_rate_power()) == static_cast<T>(-0.5);
  return scalars;
}

FtrlScalars MakeFtrlScalars(const FtrlOptions& options, at::ScalarType dtype) {
  if (dtype == at::kFloat) return RoundFtrlScalars<float>(options);
  return RoundFtrlScalars<double>(options);
}

/// n^power, or √n where `scalars.root`.
torch::Tensor FtrlRoot(const torch::Tensor& accumulator, const FtrlScalars& scalars) {
  return scalars.root ? accumulator.sqrt() : accumulator.pow(scalars.power);
}

/// One FTRL update of `var`, `accumulator` and `linear` (alike in shape) with `grad`, in place,
/// in the order of operations of TensorFlow's ApplyFtrl(V2) kernel.
void ApplyFtrlUpdate(torch::Tensor& var, torch::Tensor& accumulator, torch::Tensor& linear, const torch::Tensor& grad,
                     const FtrlScalars& scalars) {
  torch::Tensor new_accumulator = grad * grad;
  new_accumulator.add_(accumulator);
  torch::Tensor root = FtrlRoot(new_accumulator, scalars);
  // sigma · w, with sigma = (n'^-p - n^-p) / lr
  torch::Tensor sigma_var = root.sub(FtrlRoot(accumulator, scalars)).div_(scalars.lr).mul_(var);
  torch::Tensor shrunk = scalars.two_l2_shrinkage > 0 ? var.mul(scalars.two_l2_shrinkage).add_(grad) : grad;
  linear.add_(shrunk.sub(sigma_var));
  torch::Tensor x = linear.sign().mul_(scalars.l1).sub_(linear);
  root.div_(scalars.lr).add_(scalars.two_l2);
  var.copy_(x.div_(root).masked_fill_(linear.abs().gt(scalars.l1).logical_not_(), 0));
  accumulator.copy_(new_accumulator);
}

/// Elements per slice of ApplyFtrlChunked: a slice's temporaries (a few times its size) stay in
/// the cache, and are small enough for malloc to keep instead of mapping fresh pages.
constexpr int64_t kFtrlChunk = int64_t{1} << 14;

/// ApplyFtrlUpdate over slices of kFtrlChunk elements in parallel where the tensors are
/// contiguous on the CPU; each element goes through the same operations, so the results are the
/// same. On 16 M float32 elements at one thread, about 4 times faster than one pass of each
/// operation over the whole tensors.
void ApplyFtrlChunked(torch::Tensor& var, torch::Tensor& accumulator, torch::Tensor& linear, const torch::Tensor& grad,
                      const FtrlScalars& scalars) {
  const int64_t n = var.numel();
  if (n <= kFtrlChunk || !var.is_cpu() || !var.is_contiguous() || !accumulator.is_contiguous() ||
      !linear.is_contiguous()) {
    ApplyFtrlUpdate(var, accumulator, linear, grad, scalars);
    return;
  }
  const torch::Tensor flat_var = var.detach().view({n});
  const torch::Tensor flat_accumulator = accumulator.view({n});
  const torch::Tensor flat_linear = linear.view({n});
  const torch::Tensor flat_grad = grad.reshape({n});
  at::parallel_for(0, (n + kFtrlChunk - 1) / kFtrlChunk, 1, [&](int64_t begin, int64_t end) {
    torch::NoGradGuard no_grad;  // the step's guard is the calling thread's alone
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t start = chunk * kFtrlChunk;
      const int64_t length = std::min(kFtrlChunk, n - start);
      torch::Tensor var_chunk = flat_var.narrow(0, start, length);
      torch::Tensor accumulator_chunk = flat_accumulator.narrow(0, start, length);
      torch::Tensor linear_chunk = flat_linear.narrow(0, start, length);
      ApplyFtrlUpdate(var_chunk, accumulator_chunk, linear_chunk, flat_grad.narrow(0, start, length), scalars);
    }
  });
}

/// The update of the rows `rows` (of dimension 0) alone, with their gradient `row_grad`.
void ApplyFtrlRows(torch::Tensor& var, torch::Tensor& accumulator, torch::Tensor& linear, const torch::Tensor& rows,
                   const torch::Tensor& row_grad, const FtrlScalars& scalars) {
  torch::Tensor var_rows = var.index_select(0, rows);
  torch::Tensor accumulator_rows = accumulator.index_select(0, rows);
  torch::Tensor linear_rows = linear.index_select(0, rows);
  ApplyFtrlChunked(var_rows, accumulator_rows, linear_rows, row_grad, scalars);
  var.index_copy_(0, rows, var_rows);
  accumulator.index_copy_(0, rows, accumulator_rows);
  linear.index_copy_(0, rows, linear_rows);
}

/// Whether each row of the contiguous CPU `grad` has an element other than zero (-0 is zero, NaN
/// is not): one pass that reads each row once, where LibTorch's ne(0).any(1) writes a mask and
/// reduces it along short rows about ten times slower.
template <typename T>
void MarkTouchedRows(const torch::Tensor& grad, torch::Tensor& touched) {
  const int64_t width = grad.numel() / grad.size(0);
  const T* data = grad.data_ptr<T>();
  bool* out = touched.data_ptr<bool>();
  at::parallel_for(0, grad.size(0), 1 << 12, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const T* values = data + row * width;
      bool any = false;
      for (int64_t j = 0; j < width; ++j) any |= values[j] != T(0);
      out[row] = any;
    }
  });
}

/// The rows (of dimension 0) of a dense `grad` with an element other than zero.
torch::Tensor TouchedRows(const torch::Tensor& grad) {
  torch::Tensor touched;
  const bool floating = grad.scalar_type() == at::kFloat || grad.scalar_type() == at::kDouble;
  if (grad.is_cpu() && grad.is_contiguous() && floating) {
    touched = torch::empty({grad.size(0)}, grad.options().dtype(torch::kBool));
    if (grad.scalar_type() == at::kFloat) {
      MarkTouchedRows<float>(grad, touched);
    } else {
      MarkTouchedRows<double>(grad, touched);
    }
  } else {
    touched = grad.dim() == 1 ? grad.ne(0) : grad.reshape({grad.size(0), -1}).ne(0).any(1);
  }
  return touched.nonzero().squeeze(1);
}

/// Updates `param` with its gradient `grad` under `options`.
void StepFtrlParameter(torch::Tensor param, const torch::Tensor& grad, FtrlParamState& state,
                       const FtrlOptions& options) {
  const FtrlScalars scalars = MakeFtrlScalars(options, param.scalar_type());
  torch::Tensor& accumulator = state.accumulator();
  torch::Tensor& linear = state.linear();
  if (grad.is_sparse()) {
    EST_CHECK(grad.sparse_dim() == 1, ConfigError, "Ftrl takes sparse gradients of rows (sparse_dim 1), not of ",
              grad.sparse_dim(), " sparse dimensions");
    const torch::Tensor coalesced = grad.coalesce();
    ApplyFtrlRows(param, accumulator, linear, coalesced.indices()[0], coalesced.values(), scalars);
    return;
  }
  if (options.sparse_rows() && param.dim() > 0) {
    const torch::Tensor rows = TouchedRows(grad);
    if (rows.numel() == 0) return;
    if (rows.numel() < param.size(0)) {
      ApplyFtrlRows(param, accumulator, linear, rows, grad.index_select(0, rows), scalars);
      return;
    }
  } else if (options.sparse_rows() && !grad.ne(0).item<bool>()) {
    return;
  }
  ApplyFtrlChunked(param, accumulator, linear, grad, scalars);
}

}  // namespace

FtrlOptions::FtrlOptions(double lr) : lr_(lr) {}

void FtrlOptions::serialize(torch::serialize::InputArchive& archive) {
  c10::IValue value;
  const auto read = [&](const char* key) {
    archive.read(key, value);
    return value;
  };
  lr(read("lr").toDouble());
  learning_rate_power(read("learning_rate_power").toDouble());
  initial_accumulator_value(read("initial_accumulator_value").toDouble());
  l1(read("l1").toDouble());
  l2(read("l2").toDouble());
  l2_shrinkage(read("l2_shrinkage").toDouble());
  beta(read("beta").toDouble());
  sparse_rows(read("sparse_rows").toBool());
}

void FtrlOptions::serialize(torch::serialize::OutputArchive& archive) const {
  archive.write("lr", c10::IValue(lr()));
  archive.write("learning_rate_power", c10::IValue(learning_rate_power()));
  archive.write("initial_accumulator_value", c10::IValue(initial_accumulator_value()));
  archive.write("l1", c10::IValue(l1()));
  archive.write("l2", c10::IValue(l2()));
  archive.write("l2_shrinkage", c10::IValue(l2_shrinkage()));
  archive.write("beta", c10::IValue(beta()));
  archive.write("sparse_rows", c10::IValue(sparse_rows()));
}

double FtrlOptions::get_lr() const { return lr(); }

void FtrlOptions::set_lr(const double lr) { this->lr(lr); }

bool operator==(const FtrlOptions& lhs, const FtrlOptions& rhs) {
  return lhs.lr() == rhs.lr() && lhs.learning_rate_power() == rhs.learning_rate_power() &&
         lhs.initial_accumulator_value() == rhs.initial_accumulator_value() && lhs.l1() == rhs.l1() &&
         lhs.l2() == rhs.l2() && lhs.l2_shrinkage() == rhs.l2_shrinkage() && lhs.beta() == rhs.beta() &&
         lhs.sparse_rows() == rhs.sparse_rows();
}

void FtrlParamState::serialize(torch::serialize::InputArchive& archive) {
  c10::IValue value;
  if (archive.try_read("accumulator", value)) accumulator(value.toTensor());
  if (archive.try_read("linear", value)) linear(value.toTensor());
}

void FtrlParamState::serialize(torch::serialize::OutputArchive& archive) const {
  if (accumulator().defined()) archive.write("accumulator", c10::IValue(accumulator()));
  if (linear().defined()) archive.write("linear", c10::IValue(linear()));
}

bool operator==(const FtrlParamState& lhs, const FtrlParamState& rhs) {
  return torch::equal(lhs.accumulator(), rhs.accumulator()) && torch::equal(lhs.linear(), rhs.linear());
}

Ftrl::Ftrl(std::vector<torch::optim::OptimizerParamGroup> param_groups, FtrlOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<FtrlOptions>(defaults)) {
  ValidateFtrlOptions(defaults);
  for (const auto& group : param_groups_) ValidateFtrlOptions(static_cast<const FtrlOptions&>(group.options()));
}

Ftrl::Ftrl(std::vector<torch::Tensor> params, FtrlOptions defaults)
    : Ftrl({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

torch::Tensor Ftrl::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const FtrlOptions&>(group.options());
    ValidateFtrlOptions(options);
    for (auto& param : group.params()) {
      if (!param.grad().defined()) continue;
      auto& slot = state_[OptimizerStateKey<decltype(state_)>(param)];
      if (!slot) {
        auto state = std::make_unique<FtrlParamState>();
        state->accumulator(torch::full_like(param, options.initial_accumulator_value(), at::MemoryFormat::Preserve));
        state->linear(torch::zeros_like(param, at::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      StepFtrlParameter(param, param.grad(), static_cast<FtrlParamState&>(*slot), options);
    }
  }
  return loss;
}

void Ftrl::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<FtrlParamState, FtrlOptions>(archive, *this);
}

void Ftrl::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<FtrlParamState, FtrlOptions>(archive, *this);
}

}  // namespace est::optim
