#pragma once
/// The optimizers of canned estimators, named as TensorFlow's canned estimators take them
/// ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD") and made with the defaults of the Keras
/// optimizers TensorFlow 2.15 makes of those names (tf.keras.optimizers.legacy.*):
///
///   Adagrad  LibTorch's Adagrad, initial_accumulator_value 0.1, eps 1e-7 (Keras' update)
///   Adam     LibTorch's Adam, betas 0.9 / 0.999, eps 1e-7 (LibTorch adds eps to the
///            bias-corrected root, Keras to the raw one: they differ where eps matters)
///   Ftrl     est::optim::Ftrl, Keras' Ftrl (learning_rate_power -0.5, accumulator 0.1)
///   RMSProp  LibTorch's RMSprop, alpha (rho) 0.9, eps 1e-7
///   SGD      LibTorch's SGD

#include <optional>
#include <string>
#include <vector>

#include "distribute/optimizer/ftrl.h"
#include "estimator/schedules/learning_rate_schedule.h"

namespace torch::optim {
class Optimizer;
}

namespace est {
class ModelContext;
}

namespace est::canned {

/// An optimizer by name; an empty name or learning rate takes the estimator's default.
struct OptimizerSpec {
  /// The estimator's default optimizer.
  OptimizerSpec() = default;
  /// `name` with the estimator's default learning rate for it.
  OptimizerSpec(const char* name) : name(name) {}  // NOLINT: implicit, as TF's optimizer='Ftrl'
  /// `name` with `learning_rate`.
  OptimizerSpec(std::string name, std::optional<double> learning_rate = std::nullopt)  // NOLINT: implicit
      : name(std::move(name)), learning_rate(learning_rate) {}

  /// "Adagrad", "Adam", "Ftrl", "RMSProp" or "SGD"; empty: the estimator's default.
  std::string name;
  /// The learning rate; empty: the estimator's default.
  std::optional<double> learning_rate;
  /// FTRL's regularization and schedule (its lr is learning_rate's), for "Ftrl".
  optim::FtrlOptions ftrl;
  /// The learning rate at each global step, as TensorFlow takes a LearningRateSchedule for an
  /// optimizer's learning_rate (CosineDecay(...)): set before every step and written to
  /// TensorBoard as `learning_rate/<optimizer>`; it takes the place of learning_rate. Empty:
  /// learning_rate throughout.
  std::optional<schedules::LearningRateSchedule> learning_rate_schedule;
  /// Keras' clipnorm: each of this optimizer's gradients scaled to this norm where its norm is
  /// above it.
  std::optional<double> clipnorm;
  /// Keras' global_clipnorm: this optimizer's gradients scaled by global_clipnorm / their global
  /// norm where that is above it (tf.clip_by_global_norm over its variables). Not with clipnorm.
  std::optional<double> global_clipnorm;
};

/// Makes (on the first call) the optimizer `context_name` of `ctx` from `spec` (its empty name
/// taking `default_name`, its empty learning rate `default_learning_rate` whatever the name, as
/// TensorFlow's estimators pass their rate with an optimizer's name) over `dense` variables
/// and `sparse_rows` variables: those whose rows only some examples touch (an embedding table, a
/// linear model's weights of a categorical column), which FTRL updates row by row as TensorFlow
/// does. ConfigError naming the optimizer for an unknown name or a learning rate not above 0.
torch::optim::Optimizer& MakeOptimizer(ModelContext& ctx, const std::string& context_name, const OptimizerSpec& spec,
                                       const std::string& default_name, double default_learning_rate,
                                       const std::vector<at::Tensor>& dense, const std::vector<at::Tensor>& sparse_rows);

}  // namespace est::canned
