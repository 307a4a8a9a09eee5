#pragma once
/// The cluster of a launch across hosts (est-launch --nnodes): each host's est-launch offers
/// its tasks and the address they listen on, and node 0 joins the offers into one TF_CONFIG
/// cluster, numbering each job's tasks in node-rank order.

#include <set>
#include <string>
#include <vector>

#include "apps/est_launch/host_tasks.h"

namespace est_launch {

/// What one host's est-launch brings: its tasks (ClusterLayout, whose host is where they
/// listen) on ports first_port, first_port + 1, ... in ClusterSpec's order.
struct NodeOffer {
  int node_rank = 0;
  ClusterLayout layout;
  int first_port = 0;
};

/// The job that node 0 makes of every node's offer.
struct JobPlan {
  /// TF_CONFIG's "cluster": the chief, the workers of node 0, then node 1's, ..., likewise the
  /// ps tasks, and the evaluator.
  est::distribute::ClusterSpec cluster;
  /// The tasks of each node, by node rank (none for a rank without an offer), with their
  /// indices in the whole job, in the order of that node's ports.
  std::vector<std::vector<TaskId>> node_tasks;
  /// The job's training tasks: its chief and workers.
  int training_tasks = 0;
};

/// "node 2", "nodes 0 and 1", "nodes 1, 2 and 3".
std::string DescribeNodes(const std::vector<int>& ranks);

/// --nnodes as written: "2", or "2:4" for 2 to 4 hosts.
std::string DescribeNodeCount(int min_nodes, int max_nodes);

/// The tasks of a node that joins a running job (its offer `offer`): its workers, one of
/// them at each of the lowest worker indices that `taken` (the running workers') does not
/// hold, listening on the offer's ports; `cluster` (TF_CONFIG's, the job's so far) gets their
/// addresses. Throws est::ConfigError naming what the offer holds beyond workers (a running
/// job has its chief, ps tasks and evaluator), or for an offer of none.
std::vector<TaskId> PlanJoiningNode(const NodeOffer& offer, const std::set<int>& taken,
                                    est::distribute::ClusterSpec& cluster);

/// Joins `offers` (by ascending node rank, node 0 first); throws est::ConfigError naming the nodes at
/// fault when more than one node has a chief or an evaluator, or when the job has no worker
/// and no chief, and naming node 0's --min-workers `min_workers` when it exceeds the job's
/// training tasks or the job has ps tasks, and its --max-workers `max_workers` (0: none) when
/// it is fewer than the job's training tasks.
JobPlan PlanJob(const std::vector<NodeOffer>& offers, int min_workers = 0, int max_workers = 0);

}  // namespace est_launch
