#pragma once
/// OptimizerAgreement: whether the workers of a ps job step with the same optimizer. A push
/// carries the optimizer options of each shard it updates and the global step its worker's
/// model_fn saw. A learning-rate schedule is a function of the global step, so the workers'
/// options agree at any one step; two pushes for one step whose options differ come from
/// workers whose model_fns build different optimizers (another learning rate, another kind).
/// Internal to the parameter servers.

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "distribute/parameter_server/variable_service.pb.h"

namespace est::distribute {

/// The options the workers pushed for the most recent steps. Not thread-safe.
class OptimizerAgreement {
 public:
  /// "" when `optimizers` (by shard id), pushed by `worker` for global step `step`, agree with
  /// what other workers pushed for that step; otherwise what differs: the shard (as
  /// `shard_name` describes it: "'dense/w' part 1"), both workers, the step, each option with
  /// both values, and the fix.
  /// Remembers them when they agree.
  std::string check(uint32_t worker, int64_t step, const std::map<uint32_t, ps::OptimizerConfig>& optimizers,
                    const std::function<std::string(uint32_t shard)>& shard_name);

 private:
  struct Pushed {
    uint32_t worker = 0;
    ps::OptimizerConfig options;
  };
  /// How many steps are remembered.
  static constexpr size_t kStepsKept = 64;
  std::map<int64_t, std::map<uint32_t, Pushed>> by_step_;
};

/// The options in which `a` and `b` differ, with both values: "lr 0.1 and 0.01, momentum 0.9
/// and 0"; "" when they are equal.
std::string OptimizerDifference(const ps::OptimizerConfig& a, const ps::OptimizerConfig& b);

}  // namespace est::distribute
