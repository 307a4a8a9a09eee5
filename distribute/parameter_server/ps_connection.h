#pragma once
/// PsConnection: a worker's (or the chief's) side of the job's ps tasks. Whole variables go
/// in and out; it cuts them into the plan's shards, talks to every ps task in parallel, and
/// puts the shards back together. Internal to the parameter servers.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distribute/parameter_server/placement.h"
#include "distribute/parameter_server/shard_optimizer.h"
#include "distribute/parameter_server/tensor_pool.h"
#include "distribute/parameter_server/variable_server.h"
#include "net/tls_options.h"

namespace est::distribute {

/// Where the ps tasks are and how to reach them.
struct PsConnectionOptions {
  /// Host and port of each ps task, in task order.
  std::vector<std::pair<std::string, uint16_t>> tasks;
  std::string job_id = "default";
  std::string token;
  net::TlsOptions tls;
  /// Limit on each call, reconnecting included, and on waiting for the chief to initialize.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// How the tasks combine pushes (the chief's is the job's; others must match it).
  ps::UpdateRule rule;
  /// How variables are cut and spread (num_ps is the number of addresses).
  PlacementOptions placement;
  /// This worker's index.
  uint32_t worker = 0;
};

/// Whole variables as the ps tasks hold them.
struct PsValues {
  int64_t global_step = 0;
  /// One per variable of the plan, on the CPU.
  std::vector<at::Tensor> values;
  /// One per variable (with_state only; empty for a variable without optimizer state).
  std::vector<OptimizerSlots> slots;
  /// Each worker's input position (with_state only).
  std::map<uint32_t, int64_t> input_positions;
};

/// Clients of every ps task of a job. Thread-compatible: one caller at a time.
class PsConnection {
 public:
  explicit PsConnection(PsConnectionOptions options);
  ~PsConnection();

  int num_ps() const { return static_cast<int>(clients_.size()); }
  /// This worker's index.
  uint32_t worker() const { return options_.worker; }
  /// The plan; set by initialize() or wait_initialized().
  const Placement& placement() const;
  /// True once the plan is known.
  bool has_plan() const { return placement_ != nullptr; }

  /// Whether ps 0 holds variables now (the chief initialized them); on a true answer the plan
  /// is computed from ps 0's variables and checked against every task's.
  bool initialized();
  /// Each worker's input position as ps 0 knew it when initialized() last answered true.
  const std::map<uint32_t, int64_t>& input_positions() const { return input_positions_; }
  /// Waits until the chief initialized every ps task (then as initialized()); TimeoutError
  /// naming a task that still holds nothing after the timeout.
  void wait_initialized();

  /// The chief: gives every ps task its shards of `variables` with their values, optimizers
  /// (none for a variable no optimizer updates) and optimizer state, the global step and the
  /// input positions. Tasks that hold variables already keep theirs, unless `replace` (the
  /// chief restoring every task after one restarted). Returns true when it initialized ps 0.
  bool initialize(const std::vector<VariableInfo>& variables, const std::vector<at::Tensor>& values,
                  const std::vector<std::optional<ps::OptimizerConfig>>& optimizers,
                  const std::vector<OptimizerSlots>& slots, int64_t global_step,
                  const std::map<uint32_t, int64_t>& input_positions, bool replace = false);

  /// Every variable, whole, from every task in parallel; `with_state`: with optimizer slots and
  /// input positions, each task's at one version. A variable's values land in into[v] when that
  /// is a contiguous CPU tensor of its shape and dtype (the variable itself, say), else in a
  /// buffer this connection reuses once the caller lets go of it.
  PsValues pull(bool with_state, const std::vector<at::Tensor>& into = {});

  /// Pushes one step's gradients (one per variable, any device; undefined: none) with the
  /// optimizer options of each variable and this worker's input position, to every task in
  /// parallel. `step`: SYNC, the global step of the values the gradients come from;
  /// `options_step`: the global step the worker's model_fn saw (its options'); `clipping`:
  /// SYNC, how the tasks clip the step's mean. Clipping by global norm over several tasks,
  /// finishes the step: when every task told its part of the norm of one step and some task
  /// awaits it, sends every task that step's global norm (ApplyRound). Returns that global
  /// norm before clipping, when every task told its part; nullopt otherwise.
  /// PsJobFinished when the chief finished the job.
  std::optional<double> push(const std::vector<at::Tensor>& gradients,
                             const std::vector<std::optional<ps::OptimizerConfig>>& optimizers,
                             int64_t input_position, int64_t step, int64_t options_step,
                             const ps::Clipping& clipping = ps::Clipping());

  /// The update rule this worker was configured with (the chief's is the job's).
  const ps::UpdateRule& rule() const { return options_.rule; }

  /// Tells every task that the job is finished (the chief) or that this worker leaves;
  /// failures are logged, not thrown (a task may have exited).
  void finish(bool job);

 private:
  /// Runs fn(task) for every ps task at once; rethrows the first failure.
  void for_each_task(const std::function<void(int task)>& fn);
  void set_plan(std::vector<VariableInfo> variables, uint64_t expected_fingerprint);

  PsConnectionOptions options_;
  std::vector<std::unique_ptr<VariableClient>> clients_;
  TensorPool buffers_;  ///< whole variables pulled without a destination, by variable index
  std::vector<uint64_t> incarnations_;
  std::unique_ptr<Placement> placement_;
  uint64_t sequence_ = 0;
  std::map<uint32_t, int64_t> input_positions_;
};

}  // namespace est::distribute
