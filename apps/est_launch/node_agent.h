#pragma once
/// A launch across hosts, as torchrun's node agents: one est-launch per host, started with
/// --nnodes N --node-rank i --rendezvous HOST:PORT. Node 0 listens at the rendezvous address;
/// the others connect to it and offer their tasks; once all N have joined, node 0 sends each
/// the job's TF_CONFIG cluster, and every host starts and supervises its own tasks. The
/// connections stay open while the job runs: a failed task, a caught signal or a lost
/// est-launch on one host stops the tasks on every host, and node 0 decides whether the
/// whole job starts again (--max-restarts), in a new rendezvous that a restarted host joins.
/// With node 0's --min-workers, a failed worker, or a lost est-launch of a host without the
/// chief (whose workers die with it), stops nothing while enough training tasks are left, and
/// a host that joins while the job runs (--nnodes MIN:MAX, or one in place of a lost host)
/// brings workers that join the running training group.

#include <string>

#include "apps/est_launch/host_tasks.h"
#include "apps/est_launch/cpu_binding.h"
#include "apps/est_launch/supervisor.h"

namespace est_launch {

/// This host's part in a launch across hosts.
struct NodeOptions {
  /// Hosts that must join before the job starts: nodes 0 .. min_nodes - 1.
  int min_nodes = 2;
  /// The most hosts (est-launch processes) of the job, 2 or more: nodes min_nodes ..
  /// max_nodes - 1 join when they come, before the job starts or, under node 0's
  /// --min-workers, while it runs, as does a host that replaces one whose est-launch is gone.
  int max_nodes = 2;
  /// This host's rank, 0 .. max_nodes - 1; node 0 hosts the rendezvous.
  int node_rank = 0;
  /// Where node 0 listens and the others connect.
  std::string rendezvous_host;
  /// The rendezvous port.
  int rendezvous_port = 0;
  /// How long a rendezvous (the first and each after a restart) may take.
  double rendezvous_timeout_secs = 600;
  /// This host's tasks. An empty host: node 0's is the rendezvous host, another node's the
  /// address it reaches node 0 from.
  ClusterLayout layout;
  /// The first port of this host's tasks; 0: a free run of ports found on its host.
  int port = 0;
  /// CPU binding of this host's tasks, planned on this host's CPUs.
  CpuBindMode cpu_bind = CpuBindMode::kAuto;
  /// Whether the job token (LaunchOptions::job_token) is est-launch's EST_JOB_TOKEN. Then a
  /// node joins only with the same token; otherwise node 0's random token is given to each.
  bool token_from_environment = false;
};

/// Runs this host's part of the job until it ends; returns est-launch's exit status (as
/// RunCluster's; 2 for a job that node 0 refuses, such as two chiefs). `options` gives the
/// command, grace, environment and, on node 0, the job id, token and restart policy of the
/// whole job; another node takes the job id, token and restart policy from node 0.
int RunNode(const NodeOptions& node, LaunchOptions options);

}  // namespace est_launch
