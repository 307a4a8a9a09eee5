#pragma once
/// A node other than node 0 of a launch across hosts (est-launch --nnodes): it joins node 0,
/// runs this host's tasks of the job, and follows node 0's stops and verdicts.

#include "apps/est_launch/node_agent.h"

namespace est_launch {

/// Runs this node's part of the job until it ends; returns est-launch's exit status (RunNode's).
int RunFollower(const NodeOptions& node, LaunchOptions options);

}  // namespace est_launch
