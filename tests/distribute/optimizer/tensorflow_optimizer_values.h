#pragma once
// What TensorFlow's own optimizers (the canned estimators' tf.keras.optimizers.legacy.Ftrl and
// Adagrad) left in a variable and its slots (tensorflow_optimizer_values.inc, written by
// make_tensorflow_optimizers.py), and the inputs they started from, rebuilt here exactly.

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace est::testing {

/// One case of the .inc: an optimizer, its options, a dtype and a kind of gradient ("dense",
/// "sparse": some rows, "zero_row": some rows looked up with an all-zero gradient).
struct TensorflowOptimizerCase {
  std::string name, optimizer, dtype, gradient;
  double lr, learning_rate_power, initial_accumulator_value, l1, l2, l2_shrinkage, beta, epsilon;
};

/// A slot ("var", "accumulator", "linear") of a case after `step` steps, row-major.
struct TensorflowSlotValues {
  std::string name;
  int step;
  std::string slot;
  std::vector<double> values;
};

inline const std::vector<TensorflowOptimizerCase>& TensorflowOptimizerCases() {
#define EST_TF_CASE(...) TensorflowOptimizerCase{__VA_ARGS__},
#define EST_TF_VALUES(...)
  static const std::vector<TensorflowOptimizerCase> cases = {
#include "tensorflow_optimizer_values.inc"
  };
#undef EST_TF_CASE
#undef EST_TF_VALUES
  return cases;
}

inline const std::vector<TensorflowSlotValues>& TensorflowSlots() {
#define EST_TF_CASE(...)
#define EST_TF_VALUES(name, step, slot, ...) TensorflowSlotValues{name, step, slot, {__VA_ARGS__}},
  static const std::vector<TensorflowSlotValues> slots = {
#include "tensorflow_optimizer_values.inc"
  };
#undef EST_TF_CASE
#undef EST_TF_VALUES
  return slots;
}

/// `value` as Keras's legacy optimizers hold a hyperparameter set with _set_hyper (lr,
/// learning_rate_power, l1, l2, beta): in a float32 variable, whatever the dtype of the
/// variables it updates; and Ftrl's l2_shrinkage, which tf.cast takes from a Python float
/// through a float32 tensor. Not initial_accumulator_value or Adagrad's epsilon, made in the
/// variable's dtype directly. A float64 case compares with TensorFlow exactly only with its
/// options rounded so.
inline double KerasHyper(double value) { return static_cast<double>(static_cast<float>(value)); }

/// The script's shape and steps.
constexpr int64_t kTfRows = 6;
constexpr int64_t kTfCols = 4;
constexpr int kTfSteps = 5;

inline torch::Dtype TensorflowDtype(const TensorflowOptimizerCase& c) {
  return c.dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
}

/// The variable's start: ((7 i + 3 j) mod 11 - 5) / 8.
inline torch::Tensor TensorflowInitialVariable(torch::Dtype dtype) {
  auto value = torch::empty({kTfRows, kTfCols}, torch::kFloat64);
  for (int64_t i = 0; i < kTfRows; ++i)
    for (int64_t j = 0; j < kTfCols; ++j) value[i][j] = ((7 * i + 3 * j) % 11 - 5) / 8.0;
  return value.to(dtype);
}

/// Row `row`'s gradient at `step`, as the `k`th entry of the step's indices.
inline torch::Tensor TensorflowGradientRow(int step, int64_t row, int64_t k) {
  auto value = torch::empty({kTfCols}, torch::kFloat64);
  for (int64_t j = 0; j < kTfCols; ++j) value[j] = ((5 * step + 3 * row + 7 * j + k) % 13 - 6) / 16.0;
  return value;
}

/// The rows a step of a "sparse" or "zero_row" case looks up, and whether a lookup's gradient
/// is all zeros.
inline std::vector<int64_t> TensorflowStepRows(const TensorflowOptimizerCase& c, int step) {
  static const std::vector<std::vector<int64_t>> sparse = {{0, 3}, {1, 3, 5}, {3}, {1, 1, 4}, {0, 5}};
  static const std::vector<std::vector<int64_t>> zero_row = {{0, 2}, {2, 4}, {2, 4}, {0, 4}, {2}};
  return (c.gradient == "sparse" ? sparse : zero_row)[static_cast<size_t>(step)];
}
inline bool TensorflowZeroLookup(const TensorflowOptimizerCase& c, int step, int64_t row) {
  return c.gradient == "zero_row" && ((step == 0 && row == 2) || (step == 1 && (row == 2 || row == 4)));
}

/// The step's gradient as a dense tensor: a sparse case's rows summed in, zeros elsewhere.
inline torch::Tensor TensorflowDenseGradient(const TensorflowOptimizerCase& c, int step) {
  auto grad = torch::zeros({kTfRows, kTfCols}, torch::kFloat64);
  if (c.gradient == "dense") {
    for (int64_t i = 0; i < kTfRows; ++i) grad[i] = TensorflowGradientRow(step, i, 0);
  } else {
    const std::vector<int64_t> rows = TensorflowStepRows(c, step);
    for (size_t k = 0; k < rows.size(); ++k)
      if (!TensorflowZeroLookup(c, step, rows[k]))
        grad[rows[k]] += TensorflowGradientRow(step, rows[k], static_cast<int64_t>(k));
  }
  return grad.to(TensorflowDtype(c));
}

/// A sparse case's gradient as TensorFlow's tf.IndexedSlices: a sparse COO tensor of the
/// looked-up rows, uncoalesced (a row twice, a row of zeros).
inline torch::Tensor TensorflowSparseGradient(const TensorflowOptimizerCase& c, int step) {
  const std::vector<int64_t> rows = TensorflowStepRows(c, step);
  std::vector<torch::Tensor> values;
  for (size_t k = 0; k < rows.size(); ++k)
    values.push_back(TensorflowZeroLookup(c, step, rows[k])
                         ? torch::zeros({kTfCols}, torch::kFloat64)
                         : TensorflowGradientRow(step, rows[k], static_cast<int64_t>(k)));
  auto indices = torch::tensor(rows, torch::kInt64).unsqueeze(0);
  return torch::sparse_coo_tensor(indices, torch::stack(values).to(TensorflowDtype(c)), {kTfRows, kTfCols});
}

/// TensorFlow's values of `slot` of `c` after `step` steps, in the case's dtype.
inline torch::Tensor TensorflowSlot(const TensorflowOptimizerCase& c, int step, const std::string& slot) {
  for (const auto& values : TensorflowSlots())
    if (values.name == c.name && values.step == step && values.slot == slot)
      return torch::tensor(values.values, torch::kFloat64).reshape({kTfRows, kTfCols}).to(TensorflowDtype(c));
  throw std::runtime_error("no TensorFlow values for " + c.name + " " + slot);
}

/// The largest difference between `ours` and TensorFlow's `theirs`, relative to |theirs| (or
/// absolute where |theirs| < `floor`).
inline double RelativeDifference(const torch::Tensor& ours, const torch::Tensor& theirs, double floor = 1e-6) {
  auto a = ours.to(torch::kFloat64);
  auto b = theirs.to(torch::kFloat64);
  return ((a - b).abs() / b.abs().clamp_min(floor)).max().item<double>();
}

}  // namespace est::testing
