/// libFuzzer harness for the TF_CONFIG parser: the input is the TF_CONFIG text. A
/// ConfigError is the expected answer to a bad configuration; any other exception, a crash
/// or a sanitizer report is a bug. An accepted configuration must describe a task inside
/// the cluster it came with.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "distribute/cluster/cluster_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string text(reinterpret_cast<const char*>(bytes), size);
  est::distribute::ClusterConfig config;
  try {
    config = est::distribute::ParseTfConfig(text);
  } catch (const est::ConfigError&) {
    return 0;
  }
  if (config.is_local()) return 0;
  // The parser's promise: a task of a job the cluster has, at an index inside that job
  // (an evaluator may be missing from the cluster, as in TensorFlow).
  const auto job = config.cluster.find(config.job());
  const bool known_task =
      job != config.cluster.end() ? config.task_id >= 0 && static_cast<size_t>(config.task_id) < job->second.size()
                                  : config.is_evaluator();
  const bool in_training_group = config.task_type == est::distribute::TaskType::kChief ||
                                 config.task_type == est::distribute::TaskType::kWorker;
  const bool rank_fits = in_training_group ? config.rank >= 0 && config.rank < config.num_worker_replicas
                                           : config.rank == -1;
  if (!known_task || !rank_fits || config.num_worker_replicas < 1) std::abort();
  return 0;
}
