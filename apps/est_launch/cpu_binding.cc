#include "apps/est_launch/cpu_binding.h"

#include <algorithm>
#include <cstdlib>

#include "apps/est_launch/cpu_affinity.h"
#include "common/error.h"

namespace est_launch {
namespace {

// The chief and workers among `tasks`: the tasks that may be bound.
size_t TrainingTasks(const std::vector<TaskId>& tasks) {
  return static_cast<size_t>(std::count_if(tasks.begin(), tasks.end(), [](const TaskId& t) { return t.trains(); }));
}

}  // namespace

std::vector<std::vector<int>> PlanCpuBinding(const std::vector<int>& available_cpus,
                                             const std::vector<TaskId>& tasks, CpuBindMode mode) {
  std::vector<std::vector<int>> plan(tasks.size());
  const size_t training = TrainingTasks(tasks);
  if (mode == CpuBindMode::kNone || training == 0 || available_cpus.size() < training) return plan;
  EST_ASSERT(std::is_sorted(available_cpus.begin(), available_cpus.end()));
  const size_t block = available_cpus.size() / training;
  size_t k = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].trains()) continue;
    const auto first = available_cpus.begin() + static_cast<std::ptrdiff_t>(k * block);
    plan[i].assign(first, first + static_cast<std::ptrdiff_t>(block));
    ++k;
  }
  return plan;
}

std::string CpuListText(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t end = i + 1;  // one past the run of consecutive CPUs that starts at i
    while (end < cpus.size() && cpus[end] == cpus[end - 1] + 1) ++end;
    if (!text.empty()) text += ",";
    text += std::to_string(cpus[i]);
    if (end - i > 1) text += "-" + std::to_string(cpus[end - 1]);
    i = end;
  }
  return text;
}

std::string DescribeCpuBinding(const std::vector<std::vector<int>>& plan, const std::vector<TaskId>& tasks,
                               size_t num_available_cpus, CpuBindMode mode, bool omp_num_threads_set) {
  EST_ASSERT(plan.size() == tasks.size());
  if (mode == CpuBindMode::kNone) return "";
  std::string bound;
  std::string unbound;
  size_t block = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (plan[i].empty()) {
      unbound += (unbound.empty() ? "" : ", ") + tasks[i].label();
      continue;
    }
    block = plan[i].size();
    bound += (bound.empty() ? "" : ", ") + tasks[i].label() + (block == 1 ? " to CPU " : " to CPUs ") +
             CpuListText(plan[i]);
  }
  if (bound.empty()) {
    const size_t training = TrainingTasks(tasks);
    return "not binding tasks to CPUs: " + std::to_string(training) + " training task(s) but only " +
           std::to_string(num_available_cpus) + " CPU(s) available (oversubscribed)";
  }
  return "binding " + bound +
         (omp_num_threads_set ? " (OMP_NUM_THREADS kept from the environment)"
                              : " (OMP_NUM_THREADS=" + std::to_string(block) + ")") +
         (unbound.empty() ? "" : "; " + unbound + " on all CPUs") + "; --cpu-bind none to disable";
}

std::vector<std::vector<int>> BindTasksToCpus(const std::vector<TaskId>& tasks, CpuBindMode mode,
                                              std::string* description) {
  const std::vector<int> cpus = mode == CpuBindMode::kNone ? std::vector<int>{} : AvailableCpus();
  std::vector<std::vector<int>> plan = PlanCpuBinding(cpus, tasks, mode);
  *description = DescribeCpuBinding(plan, tasks, cpus.size(), mode, std::getenv("OMP_NUM_THREADS") != nullptr);
  return plan;
}

}  // namespace est_launch
