#pragma once
/// Node 0's door of a launch across hosts (est-launch --nnodes): the listening socket at
/// --rendezvous, the connections that have not yet said who they are, and the check of a
/// node's hello against node 0's job.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/est_launch/node_agent.h"
#include "apps/est_launch/node_channel.h"
#include "apps/est_launch/node_plan.h"

namespace est_launch {

/// The connections at node 0's rendezvous address, each until it sends its first message.
class RendezvousDoor {
 public:
  using Clock = NodeChannel::Clock;

  /// Listens at host:port; throws est::ConfigError naming the address when it cannot.
  RendezvousDoor(const std::string& host, int port);

  /// The descriptors to poll: the listener and each connection that has not said hello.
  std::vector<int> fds() const;
  /// When the next connection's time to say hello runs out, if one waits.
  std::optional<Clock::time_point> next_deadline() const;
  /// Accepts the waiting connections and passes each one's first message, with the connection,
  /// to `arrived`. A connection silent for 10 s is closed; of more than 64 waiting, the oldest.
  void Take(const std::function<void(NodeChannel, const nlohmann::json&)>& arrived);

 private:
  struct Waiting {
    NodeChannel channel;
    Clock::time_point deadline;
  };
  NodeListener listener_;
  std::vector<Waiting> waiting_;
};

/// Answers `channel` that it is refused, and why (a RefusalMessage, exit status 2), and logs it.
void RefuseNode(NodeChannel& channel, const std::string& why);

/// Refuses `channel`: node `rank` has joined already, from `address` (a --node-rank given twice).
void RefuseTakenRank(NodeChannel& channel, int rank, const std::string& address);

/// The offer of a node's first message `message`, when it is a hello that fits node 0's job:
/// the same --nnodes as `node`, a node rank in 1 .. max_nodes - 1, and `job_token` where node 0
/// took its token from EST_JOB_TOKEN (else no token). Otherwise the node is refused, with the
/// reason, and nothing is returned.
std::optional<NodeOffer> CheckHello(NodeChannel& channel, const nlohmann::json& message, const NodeOptions& node,
                                    const std::string& job_token);

}  // namespace est_launch
