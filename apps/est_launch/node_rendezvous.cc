#include "apps/est_launch/node_rendezvous.h"

#include <chrono>
#include <utility>

#include "apps/est_launch/node_messages.h"
#include "apps/est_launch/node_session.h"
#include "common/error.h"
#include "net/secret_compare.h"

namespace est_launch {
namespace {

// A connection to node 0 must say who it is within this time.
constexpr auto kHelloTimeout = std::chrono::seconds(10);
// Connections that have not said who they are; the oldest makes room for a new one.
constexpr size_t kMaxWaiting = 64;

}  // namespace

RendezvousDoor::RendezvousDoor(const std::string& host, int port) : listener_(host, port) {}

std::vector<int> RendezvousDoor::fds() const {
  std::vector<int> fds{listener_.fd()};
  for (const Waiting& w : waiting_) fds.push_back(w.channel.fd());
  return fds;
}

std::optional<RendezvousDoor::Clock::time_point> RendezvousDoor::next_deadline() const {
  std::optional<Clock::time_point> next;
  for (const Waiting& w : waiting_)
    if (!next || w.deadline < *next) next = w.deadline;
  return next;
}

void RendezvousDoor::Take(const std::function<void(NodeChannel, const nlohmann::json&)>& arrived) {
  while (std::optional<NodeChannel> channel = listener_.Accept()) {
    if (waiting_.size() >= kMaxWaiting) waiting_.erase(waiting_.begin());
    waiting_.push_back({std::move(*channel), Clock::now() + kHelloTimeout});
  }
  for (auto w = waiting_.begin(); w != waiting_.end();) {
    std::vector<nlohmann::json> messages = w->channel.Receive();
    if (!messages.empty()) {
      arrived(std::move(w->channel), messages.front());
    } else if (!w->channel.closed() && Clock::now() < w->deadline) {
      ++w;
      continue;
    }
    w = waiting_.erase(w);
  }
}

void RefuseNode(NodeChannel& channel, const std::string& why) {
  SendMessage(channel, RefusalMessage{why, 2});
  node_session::Say("refused " + channel.peer() + ": " + why);
}

void RefuseTakenRank(NodeChannel& channel, int rank, const std::string& address) {
  RefuseNode(channel, "node " + std::to_string(rank) + " has joined already, from " + address +
                          ": give each host its own --node-rank");
}

std::optional<NodeOffer> CheckHello(NodeChannel& channel, const nlohmann::json& message, const NodeOptions& node,
                                    const std::string& job_token) {
  HelloMessage hello;
  try {
    hello = ParseHello(message);
  } catch (const est::ConfigError& e) {
    RefuseNode(channel, e.what());
    return std::nullopt;
  }
  const std::string nodes = DescribeNodeCount(hello.min_nodes, hello.max_nodes);
  const std::string own_nodes = DescribeNodeCount(node.min_nodes, node.max_nodes);
  if (nodes != own_nodes) {
    RefuseNode(channel, "it has --nnodes " + nodes + ", node 0 has --nnodes " + own_nodes);
    return std::nullopt;
  }
  if (node.token_from_environment ? !est::net::ConstantTimeEquals(hello.token, job_token) : !hello.token.empty()) {
    RefuseNode(channel, node.token_from_environment ? "its EST_JOB_TOKEN is missing or differs from node 0's"
                                                    : "it has an EST_JOB_TOKEN and node 0 has none: set the same "
                                                      "EST_JOB_TOKEN on every node, or on none");
    return std::nullopt;
  }
  const NodeOffer& offer = hello.offer;
  if (offer.node_rank < 1 || offer.node_rank >= node.max_nodes) {
    RefuseNode(channel, "--node-rank " + std::to_string(offer.node_rank) + " is not in 1.." +
                            std::to_string(node.max_nodes - 1) + " (node 0 is the one at --rendezvous)");
    return std::nullopt;
  }
  return offer;
}

}  // namespace est_launch
