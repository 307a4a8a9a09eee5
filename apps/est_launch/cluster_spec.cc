#include "apps/est_launch/cluster_spec.h"

#include <utility>

#include "common/error.h"

namespace est_launch {

void ValidateLayout(const ClusterLayout& layout) {
  EST_CHECK(layout.workers >= 1 || (layout.workers == 0 && layout.chief), est::ConfigError,
            "--workers must be at least 1, or 0 with --chief (got ", layout.workers, ")");
  EST_CHECK(layout.ps >= 0, est::ConfigError, "--ps must be at least 0 (got ", layout.ps, ")");
  EST_CHECK(!layout.host.empty(), est::ConfigError, "--host must not be empty");
}

void ValidatePortRange(int first_port, int count) {
  const long last = static_cast<long>(first_port) + count - 1;
  EST_CHECK(first_port >= 1 && last <= 65535, est::ConfigError, "--port ", first_port, " gives ports ", first_port,
            "-", last, " for ", count, " task(s); every port must lie in 1..65535");
}

std::string HostPort(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ClusterSpec::ClusterSpec(ClusterLayout layout, int first_port) : layout_(std::move(layout)), first_port_(first_port) {
  ValidateLayout(layout_);
  ValidatePortRange(first_port_, layout_.num_tasks());
  if (layout_.chief) tasks_.push_back({"chief", 0});
  for (int i = 0; i < layout_.workers; ++i) tasks_.push_back({"worker", i});
  for (int i = 0; i < layout_.ps; ++i) tasks_.push_back({"ps", i});
  if (layout_.evaluator) tasks_.push_back({"evaluator", 0});
}

nlohmann::json ClusterSpec::cluster_json() const {
  nlohmann::json cluster = nlohmann::json::object();
  int port = first_port_;
  for (const TaskId& task : tasks_) cluster[task.type].push_back(HostPort(layout_.host, port++));
  return cluster;
}

std::string ClusterSpec::tf_config(const TaskId& task) const {
  nlohmann::json config = {{"cluster", cluster_json()}, {"task", {{"type", task.type}, {"index", task.index}}}};
  return config.dump();
}

}  // namespace est_launch
