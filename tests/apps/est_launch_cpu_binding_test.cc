// PlanCpuBinding: disjoint blocks of CPUs for the training tasks, the evaluator unbound,
// nothing bound when oversubscribed or with --cpu-bind none; the line est-launch logs.

#include "apps/est_launch/cpu_binding.h"

#include <catch2/catch.hpp>

using est_launch::CpuBindMode;
using est_launch::DescribeCpuBinding;
using est_launch::PlanCpuBinding;
using est_launch::TaskId;
using est_launch::TaskType;
using Plan = std::vector<std::vector<int>>;

namespace {

std::vector<TaskId> Workers(int n) {
  std::vector<TaskId> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back({TaskType::kWorker, i});
  return tasks;
}

}  // namespace

TEST_CASE("PlanCpuBinding gives training tasks disjoint blocks of the available CPUs", "[launch]") {
  SECTION("2 workers on 2 CPUs: one CPU each") {
    const Plan plan = PlanCpuBinding({0, 1}, Workers(2), CpuBindMode::kAuto);
    CHECK(plan == Plan{{0}, {1}});
    CHECK(DescribeCpuBinding(plan, Workers(2), 2, CpuBindMode::kAuto, false) ==
          "binding worker 0 to CPU 0, worker 1 to CPU 1 (OMP_NUM_THREADS=1); --cpu-bind none to disable");
  }
  SECTION("2 workers on 5 CPUs: blocks of 2, CPU 4 unused") {
    const Plan plan = PlanCpuBinding({0, 1, 2, 3, 4}, Workers(2), CpuBindMode::kAuto);
    CHECK(plan == Plan{{0, 1}, {2, 3}});
    CHECK(DescribeCpuBinding(plan, Workers(2), 5, CpuBindMode::kAuto, true) ==
          "binding worker 0 to CPUs 0-1, worker 1 to CPUs 2-3 (OMP_NUM_THREADS kept from the environment); "
          "--cpu-bind none to disable");
  }
  SECTION("chief, 2 workers and an evaluator on 3 CPUs: the evaluator stays unbound") {
    const std::vector<TaskId> tasks{{TaskType::kChief, 0}, {TaskType::kWorker, 0}, {TaskType::kWorker, 1}, {TaskType::kEvaluator, 0}};
    const Plan plan = PlanCpuBinding({0, 1, 2}, tasks, CpuBindMode::kAuto);
    CHECK(plan == Plan{{0}, {1}, {2}, {}});
    CHECK(DescribeCpuBinding(plan, tasks, 3, CpuBindMode::kAuto, false) ==
          "binding chief 0 to CPU 0, worker 0 to CPU 1, worker 1 to CPU 2 (OMP_NUM_THREADS=1); "
          "evaluator 0 on all CPUs; --cpu-bind none to disable");
  }
  SECTION("3 training tasks on 2 CPUs: oversubscribed, nothing bound") {
    const std::vector<TaskId> tasks{{TaskType::kChief, 0}, {TaskType::kWorker, 0}, {TaskType::kWorker, 1}};
    const Plan plan = PlanCpuBinding({0, 1}, tasks, CpuBindMode::kAuto);
    CHECK(plan == Plan{{}, {}, {}});
    CHECK(DescribeCpuBinding(plan, tasks, 2, CpuBindMode::kAuto, false) ==
          "not binding tasks to CPUs: 3 training task(s) but only 2 CPU(s) available (oversubscribed)");
  }
  SECTION("available CPUs that are not contiguous: blocks by position in the list") {
    const Plan plan = PlanCpuBinding({1, 3, 5, 7}, Workers(2), CpuBindMode::kAuto);
    CHECK(plan == Plan{{1, 3}, {5, 7}});
    CHECK(DescribeCpuBinding(plan, Workers(2), 4, CpuBindMode::kAuto, false) ==
          "binding worker 0 to CPUs 1,3, worker 1 to CPUs 5,7 (OMP_NUM_THREADS=2); --cpu-bind none to disable");
  }
  SECTION("--cpu-bind none: nothing bound, nothing logged") {
    const Plan plan = PlanCpuBinding({0, 1, 2, 3}, Workers(2), CpuBindMode::kNone);
    CHECK(plan == Plan{{}, {}});
    CHECK(DescribeCpuBinding(plan, Workers(2), 4, CpuBindMode::kNone, false).empty());
  }
}

TEST_CASE("CpuListText writes CPUs as the kernel's Cpus_allowed_list does", "[launch]") {
  CHECK(est_launch::CpuListText({}).empty());
  CHECK(est_launch::CpuListText({3}) == "3");
  CHECK(est_launch::CpuListText({0, 1}) == "0-1");
  CHECK(est_launch::CpuListText({0, 1, 2, 3, 6, 8, 9}) == "0-3,6,8-9");
}
