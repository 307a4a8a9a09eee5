#include "apps/est_launch/host_tasks.h"

#include <utility>

#include "common/error.h"

namespace est_launch {

void ValidateLayout(const ClusterLayout& layout, bool part_of_job) {
  if (part_of_job)
    EST_CHECK(layout.workers >= 0 && layout.num_tasks() >= 1, est::ConfigError,
              "--workers ", layout.workers, " with no --chief, --ps or --evaluator: this host would run no task");
  else
    EST_CHECK(layout.workers >= 1 || (layout.workers == 0 && layout.chief), est::ConfigError,
              "--workers must be at least 1, or 0 with --chief (got ", layout.workers, ")");
  EST_CHECK(layout.ps >= 0, est::ConfigError, "--ps must be at least 0 (got ", layout.ps, ")");
  EST_CHECK(part_of_job || !layout.host.empty(), est::ConfigError, "--host must not be empty");
}

std::vector<TaskId> TasksOf(const ClusterLayout& layout) {
  std::vector<TaskId> tasks;
  if (layout.chief) tasks.push_back({TaskType::kChief, 0});
  for (int i = 0; i < layout.workers; ++i) tasks.push_back({TaskType::kWorker, i});
  for (int i = 0; i < layout.ps; ++i) tasks.push_back({TaskType::kPs, i});
  if (layout.evaluator) tasks.push_back({TaskType::kEvaluator, 0});
  return tasks;
}

void ValidatePortRange(int first_port, int count) {
  const long last = static_cast<long>(first_port) + count - 1;
  EST_CHECK(first_port >= 1 && last <= 65535, est::ConfigError, "--port ", first_port, " gives ports ", first_port,
            "-", last, " for ", count, " task(s); every port must lie in 1..65535");
}

std::pair<std::string, int> SplitHostPort(const std::string& text, const std::string& flag) {
  const size_t colon = text.rfind(':');
  std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const bool bare_ipv6 = host.find(':') != std::string::npos && text.front() != '[';
  int port = 0;
  bool digits = !port_text.empty() && port_text.size() <= 5;
  for (char c : port_text) digits = digits && c >= '0' && c <= '9';
  if (digits) port = std::stoi(port_text);
  EST_CHECK(!host.empty() && !bare_ipv6 && digits && port >= 1 && port <= 65535, est::ConfigError, flag, " '", text,
            "' is not HOST:PORT with a port in 1..65535 (an IPv6 address in brackets: [::1]:29400)");
  return {host, port};
}

HostTasks::HostTasks(const ClusterLayout& layout, int first_port)
    : tasks_(TasksOf(layout)), host_(layout.host), first_port_(first_port) {
  ValidateLayout(layout);
  ValidatePortRange(first_port_, layout.num_tasks());
  int port = first_port_;
  for (const TaskId& task : tasks_) cluster_[TaskTypeName(task.type)].push_back(JoinHostPort(host_, port++));
}

HostTasks::HostTasks(est::distribute::ClusterSpec cluster, std::vector<TaskId> tasks, std::string host, int first_port)
    : cluster_(std::move(cluster)), tasks_(std::move(tasks)), host_(std::move(host)), first_port_(first_port) {}

std::string HostTasks::tf_config(const TaskId& task) const {
  return est::distribute::TfConfigJson(cluster_, task.type, task.index);
}

}  // namespace est_launch
