#pragma once
/// The tasks one est-launch starts on its host: which tasks exist, their addresses, the cluster
/// they belong to, and the TF_CONFIG each task receives.

#include <string>
#include <utility>
#include <vector>

#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_config.h"

namespace est_launch {

using est::distribute::TaskType;

/// One task of the cluster, as TF_CONFIG names it: a job (chief, worker, ps, evaluator) and
/// an index within that job.
struct TaskId {
  TaskType type = TaskType::kWorker;
  int index = 0;

  /// "worker 1": how est-launch names the task in prefixes and messages.
  std::string label() const { return std::string(TaskTypeName(type)) + " " + std::to_string(index); }
  /// True for the training group's tasks: the chief and the workers.
  bool trains() const { return type == TaskType::kChief || type == TaskType::kWorker; }
  bool operator==(const TaskId& other) const { return type == other.type && index == other.index; }
};

/// What the flags ask for: the jobs, their sizes, and where they listen.
struct ClusterLayout {
  /// Number of tasks in job "worker"; may be 0 only with a chief.
  int workers = 1;
  /// Whether job "chief" (one task) exists; it takes the first port.
  bool chief = false;
  /// Number of tasks in job "ps" (parameter servers), after the workers.
  int ps = 0;
  /// Whether job "evaluator" (one task) exists; it takes the last port.
  bool evaluator = false;
  /// Host name or address every task listens on.
  std::string host = "127.0.0.1";

  /// Number of tasks, which is also the number of consecutive ports needed.
  int num_tasks() const { return workers + (chief ? 1 : 0) + ps + (evaluator ? 1 : 0); }
};

/// Checks the job sizes; throws est::ConfigError naming the flag at fault. A host of a launch
/// across hosts (`part_of_job`) may have no worker and no chief, but must have a task, and
/// an empty host (chosen at the rendezvous).
void ValidateLayout(const ClusterLayout& layout, bool part_of_job = false);

/// The tasks of `layout` in launch order: chief, workers by index, ps tasks by index,
/// evaluator (indices from 0).
std::vector<TaskId> TasksOf(const ClusterLayout& layout);

/// Checks that ports first_port .. first_port + count - 1 all lie in 1..65535; throws
/// est::ConfigError naming the range otherwise.
void ValidatePortRange(int first_port, int count);

/// "host:port", with an IPv6 address in brackets ("[::1]:2222") as TensorFlow writes it.
using est::distribute::JoinHostPort;

/// Splits "host:port" ("[::1]:2222" for IPv6) as written by JoinHostPort; throws
/// est::ConfigError naming `flag` when it is not of that form or the port is not in 1..65535.
std::pair<std::string, int> SplitHostPort(const std::string& text, const std::string& flag);

/// The tasks this est-launch runs, on consecutive ports of one host, and the cluster they
/// belong to: the same tasks (one host) or a job across hosts.
class HostTasks {
 public:
  /// Lays the tasks of `layout` out on ports first_port, first_port + 1, ...: chief, then
  /// workers, then ps tasks, then evaluator; throws est::ConfigError for an invalid layout or
  /// port range.
  HostTasks(const ClusterLayout& layout, int first_port);
  /// This host's `tasks` (on ports first_port, ... of `host`) of the job whose TF_CONFIG
  /// "cluster" is `cluster` (a launch across hosts).
  HostTasks(est::distribute::ClusterSpec cluster, std::vector<TaskId> tasks, std::string host, int first_port);

  /// Every task in launch order: chief, workers by index, ps tasks by index, evaluator.
  const std::vector<TaskId>& tasks() const { return tasks_; }
  /// The port of the first task.
  int first_port() const { return first_port_; }
  /// The port of the last task.
  int last_port() const { return first_port_ + static_cast<int>(tasks_.size()) - 1; }
  /// The host every task listens on.
  const std::string& host() const { return host_; }
  /// True for a parameter-server job (with ps tasks).
  bool has_ps() const { return has_job(TaskType::kPs); }
  /// True when the cluster has job `type` (a cluster without a chief job has worker 0 for chief).
  bool has_job(TaskType type) const { return cluster_.count(TaskTypeName(type)) > 0; }
  /// True for a worker the others can train on without (--min-workers): any but the chief of
  /// training, which is worker 0 in a cluster without a "chief" job.
  bool losable_worker(const TaskId& task) const {
    return task.type == TaskType::kWorker && (task.index > 0 || has_job(TaskType::kChief));
  }

  /// TF_CONFIG's "cluster": job name -> "host:port" of each task, by index.
  const est::distribute::ClusterSpec& cluster() const { return cluster_; }
  /// The TF_CONFIG value of one task: {"cluster": {...}, "task": {"type": t, "index": i}}.
  std::string tf_config(const TaskId& task) const;

 private:
  est::distribute::ClusterSpec cluster_;
  std::vector<TaskId> tasks_;
  std::string host_;
  int first_port_;
};

}  // namespace est_launch
