#pragma once
/// What node 0 and the other nodes of a launch across hosts (est-launch --nnodes) share: their
/// log lines, and how a node runs its tasks in a round of the job.

#include <chrono>
#include <string>

#include "apps/est_launch/node_agent.h"
#include "apps/est_launch/node_channel.h"
#include "apps/est_launch/node_messages.h"
#include "apps/est_launch/node_plan.h"
#include "apps/est_launch/supervisor.h"

namespace est_launch {

class SignalPipe;

namespace node_session {

using Clock = NodeChannel::Clock;

/// Waits longer than this are logged, once per interval.
constexpr auto kProgressInterval = std::chrono::seconds(30);
/// How long past a bound on its side node 0 may take to answer: the other hosts' reports of
/// their end after a stop (beyond their grace), node 0's answer to a joined node.
constexpr auto kEndReportMargin = std::chrono::seconds(30);

/// Writes "est-launch: <message>" to stderr.
void Say(const std::string& message);
/// `secs` seconds as a Clock duration.
Clock::duration Secs(double secs);
/// "12 s": the whole seconds since `since`.
std::string Elapsed(Clock::time_point since);
/// The first stop signal caught since the last call, or 0: SIGCHLD does not count, nor
/// kFlightRecorderSignal, which between rounds finds no task to forward it to.
int TakeStopSignal(SignalPipe& signals);
/// This host's offer: its tasks, on its own --port or a free run of ports of `host`.
NodeOffer MakeOffer(const NodeOptions& node, const std::string& host);
/// Node 0's start of `tasks` in round `round` of the job whose TF_CONFIG cluster is `cluster`,
/// with the job id, token and restart policy of node 0's `options`.
NodeStart MakeStart(const LaunchOptions& options, int round, const est::distribute::ClusterSpec& cluster,
                    const std::vector<TaskId>& tasks);
/// Takes the job id, token and restart policy of node 0's `start` into this node's `options`.
void TakeJobSettings(const NodeStart& start, LaunchOptions& options);
/// Starts this host's tasks of `spec` for round `round` and supervises them, `peers` being the
/// other hosts as this one sees them.
RoundResult RunHostTasks(const NodeOptions& node, const HostTasks& spec, LaunchOptions& options, int round,
                         SignalPipe& signals, PeerNodes& peers);

}  // namespace node_session
}  // namespace est_launch
