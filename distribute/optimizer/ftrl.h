#pragma once
/// est::optim::Ftrl: the FTRL-Proximal optimizer (McMahan et al., 2013) that TensorFlow 2.15's
/// canned LinearClassifier and the linear part of DNNLinearCombinedClassifier train with
/// (tf.keras.optimizers.legacy.Ftrl, whose update is the ApplyFtrl / ApplyFtrlV2 kernel), for
/// any LibTorch model and for the ps tasks of ParameterServerStrategy alike.
///
/// Per element, with g the gradient, n the accumulator, z the linear term, w the variable and
/// p = learning_rate_power (√ where p = -0.5):
///
///     n' = n + g²
///     z += g + 2·l2_shrinkage·w - (n'^-p - n^-p) / lr · w
///     w  = |z| > l1 ? (l1·sign(z) - z) / (n'^-p / lr + 2·(l2 + beta / (2·lr))) : 0
///     n  = n'
///
/// in TensorFlow's order of operations and in the variable's dtype (its scalars too), so that
/// the results are TensorFlow's to within rounding (tests/distribute/optimizer/ftrl_test.cc
/// compares with TensorFlow's own numbers). w is a function of z and n alone: the first step
/// replaces a variable's initial value, as TensorFlow's does.
///
/// Dense gradients update every element, as TensorFlow updates a variable whose gradient is a
/// dense tensor. Where TensorFlow's gradient is a tf.IndexedSlices (an embedding lookup, a
/// linear model's weights of a categorical column) it updates the looked-up rows only; a
/// sparse COO gradient here (torch::nn::Embedding with sparse(true)) does exactly that, its
/// rows of dimension 0 being the looked-up ones (duplicates summed, as TensorFlow sums them).
/// For the dense gradients LibTorch gives otherwise, `FtrlOptions::sparse_rows` leaves every
/// row (slice of dimension 0) whose gradient is entirely zero untouched, its variable,
/// accumulator and linear term alike: TensorFlow's sparse update for the rows it did not look
/// up. It differs from TensorFlow's only for a row looked up whose gradient is exactly zero,
/// which TensorFlow still updates: it sets w from z and n again (the same value where w is
/// what FTRL's last update of the row left with the same lr, l1, l2 and beta, but 0 where the
/// row still holds its initial value) and, with l2_shrinkage > 0, adds 2·l2_shrinkage·w to z.

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <memory>
#include <utility>
#include <vector>

namespace est::optim {

/// FTRL's options, as tf.keras.optimizers.legacy.Ftrl names them (l1, l2 and l2_shrinkage for
/// its *_regularization_strength), with its defaults. ConfigError from Ftrl's constructor and
/// step for an option out of range.
struct FtrlOptions : public torch::optim::OptimizerCloneableOptions<FtrlOptions> {
  /// Options with learning rate `lr`.
  FtrlOptions(double lr = 0.001);  // NOLINT(google-explicit-constructor): as AdagradOptions
  /// The learning rate; > 0.
  TORCH_ARG(double, lr) = 0.001;
  /// How the per-element learning rate falls as the accumulator grows (n^learning_rate_power);
  /// ≤ 0, 0 for a fixed learning rate.
  TORCH_ARG(double, learning_rate_power) = -0.5;
  /// The accumulator's starting value; ≥ 0.
  TORCH_ARG(double, initial_accumulator_value) = 0.1;
  /// L1 regularization strength; ≥ 0.
  TORCH_ARG(double, l1) = 0;
  /// L2 regularization strength (the paper's stabilizing penalty); ≥ 0.
  TORCH_ARG(double, l2) = 0;
  /// L2 shrinkage strength, a magnitude penalty added to the loss: the gradient's
  /// 2·l2_shrinkage·w; ≥ 0.
  TORCH_ARG(double, l2_shrinkage) = 0;
  /// The paper's beta, added to the accumulator's root in the denominator; ≥ 0.
  TORCH_ARG(double, beta) = 0;
  /// Leave rows (slices of dimension 0) whose dense gradient is entirely zero untouched, as
  /// TensorFlow's sparse update leaves rows it did not look up (see the top of this file).
  TORCH_ARG(bool, sparse_rows) = false;

 public:
  /// Reads the options from a checkpoint's archive.
  void serialize(torch::serialize::InputArchive& archive) override;
  /// Writes the options into a checkpoint's archive.
  void serialize(torch::serialize::OutputArchive& archive) const override;
  /// lr(), for LibTorch's schedulers and the Estimator's learning-rate schedules.
  double get_lr() const override;
  /// Sets lr().
  void set_lr(const double lr) override;
  /// True when every option is equal.
  friend bool operator==(const FtrlOptions& lhs, const FtrlOptions& rhs);
};

/// FTRL's state of one parameter: TensorFlow's "accumulator" and "linear" slots.
struct FtrlParamState : public torch::optim::OptimizerCloneableParamState<FtrlParamState> {
  /// The sum of the squared gradients, from initial_accumulator_value.
  TORCH_ARG(torch::Tensor, accumulator);
  /// FTRL's z: the gradients less the learning-rate changes times the variable, from 0.
  TORCH_ARG(torch::Tensor, linear);

 public:
  /// Reads the state from a checkpoint's archive.
  void serialize(torch::serialize::InputArchive& archive) override;
  /// Writes the state into a checkpoint's archive.
  void serialize(torch::serialize::OutputArchive& archive) const override;
  /// True when both tensors are equal.
  friend bool operator==(const FtrlParamState& lhs, const FtrlParamState& rhs);
};

/// The FTRL-Proximal optimizer with TensorFlow's update. A parameter's state is made at its
/// first step (accumulator initial_accumulator_value, linear 0), as TensorFlow makes its slots.
/// Parameters of dtype float32 and float64 (and others, with scalars in float64), on any device.
class Ftrl : public torch::optim::Optimizer {
 public:
  /// FTRL over `param_groups`, each with its own options or `defaults`.
  explicit Ftrl(std::vector<torch::optim::OptimizerParamGroup> param_groups, FtrlOptions defaults = {});
  /// FTRL over `params` with `defaults`.
  explicit Ftrl(std::vector<torch::Tensor> params, FtrlOptions defaults = {});

  /// Updates every parameter with a gradient; returns the closure's loss where given.
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// Writes the options and state (accumulator, linear) of every parameter.
  void save(torch::serialize::OutputArchive& archive) const override;
  /// Reads what save() wrote, onto this optimizer's parameters in order.
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace est::optim
