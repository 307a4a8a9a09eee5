#pragma once
/// Node 0 of a launch across hosts (est-launch --nnodes): it hosts the rendezvous, makes the
/// job of the nodes' offers, relays stops between hosts, takes nodes that join the running job
/// (--min-workers), and decides after each round whether the job starts again.

#include "apps/est_launch/node_agent.h"

namespace est_launch {

/// Runs node 0's part of the job until it ends; returns est-launch's exit status (RunNode's).
int RunLeader(const NodeOptions& node, LaunchOptions options);

}  // namespace est_launch
