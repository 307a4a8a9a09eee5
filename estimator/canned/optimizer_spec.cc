#include "estimator/canned/optimizer_spec.h"

#include <cmath>

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <memory>

#include "common/error.h"
#include "estimator/model_context.h"

namespace est::canned {
namespace {

constexpr double kKerasEpsilon = 1e-7;

/// One parameter group of the non-empty ones, each with its own copy of `options`. The
/// optimizers are made with the same options as their defaults too: LibTorch's Adagrad fills its
/// accumulators from the defaults, not from a group's options.
template <typename Options>
std::vector<torch::optim::OptimizerParamGroup> Groups(const std::vector<at::Tensor>& dense,
                                                      const std::vector<at::Tensor>& sparse_rows,
                                                      const Options& dense_options, const Options& sparse_options) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!dense.empty()) groups.emplace_back(dense, std::make_unique<Options>(dense_options));
  if (!sparse_rows.empty()) groups.emplace_back(sparse_rows, std::make_unique<Options>(sparse_options));
  return groups;
}

template <typename Options>
std::vector<torch::optim::OptimizerParamGroup> Groups(const std::vector<at::Tensor>& dense,
                                                      const std::vector<at::Tensor>& sparse_rows,
                                                      const Options& options) {
  return Groups(dense, sparse_rows, options, options);
}

}  // namespace

torch::optim::Optimizer& MakeOptimizer(ModelContext& ctx, const std::string& context_name, const OptimizerSpec& spec,
                                       const std::string& default_name, double default_learning_rate,
                                       const std::vector<at::Tensor>& dense,
                                       const std::vector<at::Tensor>& sparse_rows) {
  const std::string name = spec.name.empty() ? default_name : spec.name;
  // A schedule's rate at step 0 makes the optimizer; the framework sets its rate every step.
  const double lr = spec.learning_rate_schedule ? (*spec.learning_rate_schedule)(0)
                                                : spec.learning_rate.value_or(default_learning_rate);
  EST_CHECK(!spec.clipnorm || !spec.global_clipnorm, ConfigError, "optimizer ", context_name, " (", name,
            "): clipnorm and global_clipnorm are both set; expected one of them, as Keras takes");
  for (const auto& [clip, what] : {std::pair(spec.clipnorm, "clipnorm"), std::pair(spec.global_clipnorm, "global_clipnorm")})
    EST_CHECK(!clip || (*clip > 0 && std::isfinite(*clip)), ConfigError, "optimizer ", context_name, " (", name, "): ",
              what, " ", clip.value_or(0), "; it must be a number above 0");
  EST_CHECK(lr > 0, ConfigError, "optimizer ", context_name, " (", name, "): learning rate ", lr,
            spec.learning_rate_schedule ? " at step 0 of " + spec.learning_rate_schedule->description() : "",
            "; it must be above 0");
  if (name == "Adagrad") {
    const auto options = torch::optim::AdagradOptions(lr).initial_accumulator_value(0.1).eps(kKerasEpsilon);
    return ctx.optimizer(context_name,
                         [&] { return torch::optim::Adagrad(Groups(dense, sparse_rows, options), options); });
  }
  if (name == "Adam") {
    const auto options = torch::optim::AdamOptions(lr).betas({0.9, 0.999}).eps(kKerasEpsilon);
    return ctx.optimizer(context_name,
                         [&] { return torch::optim::Adam(Groups(dense, sparse_rows, options), options); });
  }
  if (name == "Ftrl") {
    optim::FtrlOptions options = spec.ftrl;
    options.lr(lr);
    optim::FtrlOptions sparse = options;
    sparse.sparse_rows(true);
    return ctx.optimizer(context_name,
                         [&] { return optim::Ftrl(Groups(dense, sparse_rows, options, sparse), options); });
  }
  if (name == "RMSProp") {
    const auto options = torch::optim::RMSpropOptions(lr).alpha(0.9).eps(kKerasEpsilon);
    return ctx.optimizer(context_name,
                         [&] { return torch::optim::RMSprop(Groups(dense, sparse_rows, options), options); });
  }
  if (name == "SGD") {
    const auto options = torch::optim::SGDOptions(lr);
    return ctx.optimizer(context_name,
                         [&] { return torch::optim::SGD(Groups(dense, sparse_rows, options), options); });
  }
  EST_THROW(ConfigError, "optimizer ", context_name, ": \"", name,
            "\" is not one of \"Adagrad\", \"Adam\", \"Ftrl\", \"RMSProp\", \"SGD\"");
}

}  // namespace est::canned
