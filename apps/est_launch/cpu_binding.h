#pragma once
/// Which CPUs each task of a local cluster is bound to, as mpirun --bind-to core does: the
/// training tasks (chief, workers) get disjoint blocks of est-launch's CPUs, so that the
/// scheduler does not migrate their threads; the evaluator stays on all of them.

#include <string>
#include <vector>

#include "apps/est_launch/host_tasks.h"

namespace est_launch {

/// What --cpu-bind asks for.
enum class CpuBindMode {
  /// Disjoint blocks of CPUs for the training tasks when there are enough CPUs.
  kAuto,
  /// No task is bound.
  kNone,
};

/// The CPUs of each task in `tasks`, in that order; an empty list means unbound (the task
/// keeps all of est-launch's CPUs). With kAuto and at least as many `available_cpus`
/// (ascending) as training tasks, training task k (counting only chief and workers) gets
/// the block of floor(cpus / training tasks) CPUs at position k * block of
/// `available_cpus`; leftover CPUs go unused. With fewer CPUs than training tasks
/// (oversubscribed), or with kNone, no task is bound.
std::vector<std::vector<int>> PlanCpuBinding(const std::vector<int>& available_cpus,
                                             const std::vector<TaskId>& tasks, CpuBindMode mode);

/// CPUs in the kernel's list format (as in /proc/self/status "Cpus_allowed_list"): "0-3,6".
std::string CpuListText(const std::vector<int>& cpus);

/// The line est-launch logs about `plan` (from PlanCpuBinding with these arguments),
/// without the "est-launch: " prefix, or "" when there is nothing to say (kNone):
/// "binding worker 0 to CPU 0, worker 1 to CPU 1 (OMP_NUM_THREADS=1); --cpu-bind none to
/// disable", or why nothing is bound. `omp_num_threads_set` tells whether est-launch's
/// environment sets OMP_NUM_THREADS, which is then left as it is.
std::string DescribeCpuBinding(const std::vector<std::vector<int>>& plan, const std::vector<TaskId>& tasks,
                               size_t num_available_cpus, CpuBindMode mode, bool omp_num_threads_set);

/// The CPUs of each of `tasks` under `mode` (est-launch's available CPUs planned by
/// PlanCpuBinding), with DescribeCpuBinding's line in *description.
std::vector<std::vector<int>> BindTasksToCpus(const std::vector<TaskId>& tasks, CpuBindMode mode,
                                              std::string* description);

}  // namespace est_launch
