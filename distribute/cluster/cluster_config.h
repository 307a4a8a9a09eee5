#pragma once
/// ClusterConfig: where this process stands in a training cluster, derived as TensorFlow
/// derives it from TF_CONFIG.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace est::distribute {

/// The most training tasks (chief and workers) a job may have, however its cluster is given.
inline constexpr int kMaxTrainingTasks = 1 << 16;

/// A task's role: the jobs of TensorFlow's TF_CONFIG, or none for a local run.
enum class TaskType { kLocal, kChief, kWorker, kPs, kEvaluator };

/// The job name of `type`: "chief", "worker", "ps", "evaluator"; "" for kLocal.
const char* TaskTypeName(TaskType type);

/// The TaskType of job name `name` ("" is kLocal); nullopt for a name that is none.
std::optional<TaskType> ParseTaskType(const std::string& name);

/// Job name -> task addresses ("host:port") in task-index order.
using ClusterSpec = std::map<std::string, std::vector<std::string>>;

/// Where this process stands in a training cluster, as TensorFlow's RunConfig and
/// multi_worker_util derive it from TF_CONFIG. The training group is the chief and the
/// workers; ps and evaluator tasks are outside it.
struct ClusterConfig {
  /// Job name ("chief", "worker", "ps", "evaluator") -> task addresses in index order; an
  /// address is "" where the source does not tell it (torchrun, MPI and Slurm give only the
  /// chief's). Empty for a local run.
  ClusterSpec cluster;
  /// This task's job; kLocal for a local run.
  TaskType task_type = TaskType::kLocal;
  /// Index of this task within its job.
  int task_id = 0;
  /// True for the chief task, or worker 0 when there is no chief job; true for a local run,
  /// false for ps and evaluator tasks (as RunConfig.is_chief).
  bool is_chief = true;
  /// Tasks in the training group (chief + workers), on every task the evaluator included; 1 for
  /// a local run.
  int num_worker_replicas = 1;
  /// RunConfig.global_id_in_cluster: a unique id over the whole cluster. The chief is 0, then
  /// come the jobs other than chief and ps in alphabetical order ("evaluator" before "worker"),
  /// then ps. -1 for the evaluator task itself (TensorFlow leaves it undefined). Use `rank`
  /// for the position in the training group.
  int global_id_in_cluster = 0;
  /// Position in the training group, multi_worker_util.id_in_cluster: the chief 0, then the
  /// workers in index order; -1 for ps and evaluator tasks.
  int rank = 0;
  /// Index among the training group's tasks on this machine (LOCAL_RANK, SLURM_LOCALID,
  /// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID; for
  /// TF_CONFIG, the training tasks before this one whose address has the same host); 0 for
  /// ps and evaluator tasks and a local run.
  int local_rank = 0;
  /// "host:port" of the training group's chief (chief 0, or worker 0 when there is no chief
  /// job), where the rendezvous store lives; empty for a local run.
  std::string chief_address;
  /// This task's own "host:port"; empty when unknown (an evaluator missing from the cluster,
  /// torchrun, MPI and Slurm tasks other than rank 0) and for a local run.
  std::string task_address;
  /// Where the configuration came from: "local", "TF_CONFIG", "torchrun", "mpi", "slurm" or
  /// "explicit".
  std::string source = "local";

  /// This task's job name ("chief", "worker", "ps", "evaluator"; "" for a local run).
  std::string job() const { return TaskTypeName(task_type); }
  /// True for a local (non-distributed) run.
  bool is_local() const { return task_type == TaskType::kLocal; }
  /// True for the evaluator task, which follows the training group's checkpoints.
  bool is_evaluator() const { return task_type == TaskType::kEvaluator; }
  /// True for a parameter-server task, which holds variables and trains nothing.
  bool is_ps() const { return task_type == TaskType::kPs; }
  /// The address this task's transport binds: the host of task_address; when that is unknown,
  /// the chief's host if it is a loopback address (every task on this machine), else this
  /// machine's address on the route to the chief; "127.0.0.1" for a local run or when no
  /// route is found.
  std::string task_host() const;
};

/// Validates a cluster and derives the configuration of task `task_type`:`task_id` in it, as
/// TensorFlow does. Every non-empty address must be "host:port"; "" stands for an address the
/// source does not tell. Throws ConfigError quoting the offending part: an unknown job or
/// task type (only "chief", "worker", "ps", "evaluator"), a job without tasks, more than one
/// chief or evaluator, no training group (neither "chief" nor "worker"), a task type missing
/// from the cluster (an evaluator may be missing, as in TensorFlow), an index out of range,
/// and (our own rule) one "host:port" given to two tasks (hosts compared case-insensitively).
ClusterConfig MakeClusterConfig(const ClusterSpec& cluster, const std::string& task_type, int task_id,
                                const std::string& source);

/// The configuration of rank `rank` in a training group known only by its size and its
/// chief's "host:port" (torchrun, MPI, Slurm): every rank is a "worker" with task_id `rank`, rank 0
/// is the chief at `chief_address`, other ranks' addresses are unknown (""). Throws
/// ConfigError unless 0 <= rank < world_size and chief_address is "host:port".
ClusterConfig MakeRankedClusterConfig(int world_size, int rank, int local_rank, const std::string& chief_address,
                                      const std::string& source);

/// Parses a TF_CONFIG JSON string as TensorFlow's Estimator reads it:
/// {"cluster": {"chief": ["host:port"], "worker": [...], "ps": [...], "evaluator": [...]},
///  "task": {"type": "worker", "index": 1}}. Other top-level keys (rpc_layer, environment, …)
/// are ignored. No cluster and no task (or "{}") is a local run; a task with an empty
/// cluster, and a cluster without a task, are errors. The index may be a JSON integer or a
/// string of one (TensorFlow applies int()). The result's source is "TF_CONFIG". Throws
/// ConfigError quoting the offending part: malformed JSON (with the parser's message and the
/// text around the error), a value of the wrong JSON type, an address that is not
/// "host:port", and every error of MakeClusterConfig.
ClusterConfig ParseTfConfig(const std::string& tf_config_json);

/// The TF_CONFIG that places task `type`:`index` in `cluster`, as TensorFlow writes it and
/// ParseTfConfig reads it: {"cluster": {...}, "task": {"type": "worker", "index": 1}}.
std::string TfConfigJson(const ClusterSpec& cluster, TaskType type, int index);

/// Throws ConfigError, quoting both, unless `given` places this task where `own` does: the
/// same jobs and addresses, task type and index. `what` names the holder of `own` ("the
/// cluster of MultiWorkerMirroredStrategy's options"); `given` is RunConfig::cluster.
void CheckSameCluster(const ClusterConfig& own, const ClusterConfig& given, const std::string& what);

}  // namespace est::distribute
