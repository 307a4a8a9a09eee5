#include "apps/est_launch/node_session.h"

#include <csignal>
#include <cstdio>

#include "apps/est_launch/cpu_binding.h"
#include "apps/est_launch/port_finder.h"
#include "apps/est_launch/signal_pipe.h"
#include "apps/est_launch/task_process.h"

namespace est_launch::node_session {

void Say(const std::string& message) {
  std::fprintf(stderr, "est-launch: %s\n", message.c_str());
  std::fflush(stderr);
}

Clock::duration Secs(double secs) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(secs));
}

std::string Elapsed(Clock::time_point since) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - since).count()) + " s";
}

int TakeStopSignal(SignalPipe& signals) {
  int stop = 0;
  for (int signal_number : signals.drain())
    if (signal_number != SIGCHLD && signal_number != kFlightRecorderSignal && stop == 0) stop = signal_number;
  return stop;
}

NodeOffer MakeOffer(const NodeOptions& node, const std::string& host) {
  NodeOffer offer;
  offer.node_rank = node.node_rank;
  offer.layout = node.layout;
  offer.layout.host = host;
  offer.first_port = node.port != 0 ? node.port : FindFreePortRange(host, offer.layout.num_tasks());
  return offer;
}

NodeStart MakeStart(const LaunchOptions& options, int round, const est::distribute::ClusterSpec& cluster,
                    const std::vector<TaskId>& tasks) {
  NodeStart start;
  start.round = round;
  start.job_id = options.job_id;
  start.job_token = options.job_token;
  start.cluster = cluster;
  start.tasks = tasks;
  start.max_restarts = options.max_restarts;
  start.min_workers = options.min_workers;
  start.max_workers = options.max_workers;
  start.restart_backoff_secs = options.restart_backoff_secs;
  start.max_restart_backoff_secs = options.max_restart_backoff_secs;
  return start;
}

void TakeJobSettings(const NodeStart& start, LaunchOptions& options) {
  options.job_id = start.job_id;
  options.job_token = start.job_token;
  // Node 0's restart policy is the job's (a ps task restarts alone on its host).
  options.max_restarts = start.max_restarts;
  options.min_workers = start.min_workers;
  options.max_workers = start.max_workers;
  // Node 0 counts this host's workers lost when this est-launch is gone.
  options.workers_die_with_launcher = start.min_workers > 0;
  options.restart_backoff_secs = start.restart_backoff_secs;
  options.max_restart_backoff_secs = start.max_restart_backoff_secs;
}

RoundResult RunHostTasks(const NodeOptions& node, const HostTasks& spec, LaunchOptions& options, int round,
                         SignalPipe& signals, PeerNodes& peers) {
  const std::string ports = spec.tasks().size() == 1
                                ? "port " + std::to_string(spec.first_port())
                                : "ports " + std::to_string(spec.first_port()) + "-" + std::to_string(spec.last_port());
  Say("node " + std::to_string(node.node_rank) + " of " + DescribeNodeCount(node.min_nodes, node.max_nodes) +
      ": starting " + std::to_string(spec.tasks().size()) + " task(s) on " + spec.host() + " " + ports +
      ", EST_JOB_ID=" + options.job_id + (round > 0 ? ", restart " + std::to_string(round) : ""));
  std::string binding;
  options.task_cpus = BindTasksToCpus(spec.tasks(), node.cpu_bind, &binding);
  if (!binding.empty()) Say(binding);
  return RunRound(spec, options, round, signals, &peers);
}

}  // namespace est_launch::node_session
