#include "apps/est_launch/node_agent.h"

#include <utility>

#include "apps/est_launch/node_follower.h"
#include "apps/est_launch/node_leader.h"

namespace est_launch {

int RunNode(const NodeOptions& node, LaunchOptions options) {
  if (node.node_rank == 0) return RunLeader(node, std::move(options));
  return RunFollower(node, std::move(options));
}

}  // namespace est_launch
