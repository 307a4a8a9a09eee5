#pragma once
/// The messages of est-launch's protocol across hosts (est-launch --nnodes), typed. Each is
/// one JSON object on one line of a NodeChannel, keyed by its kind: {"start": {...}}. A
/// message that reads as none of them, or has a field missing, of another type or out of
/// range, is an est::ConfigError that names the kind and the field.

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "apps/est_launch/host_tasks.h"
#include "apps/est_launch/node_plan.h"

namespace est_launch {

class NodeChannel;

/// 4: the messages are typed, a lost worker is {"type", "index"} (3: the hello carries --nnodes
/// as "min_nodes" and "max_nodes"); a node of another version is refused at its hello.
inline constexpr int kProtocolVersion = 4;

/// A node's first message to node 0: who it is and the tasks it brings.
struct HelloMessage {
  /// Its --nnodes, which must be node 0's.
  int min_nodes = 0;
  int max_nodes = 0;
  /// Its EST_JOB_TOKEN when it has one of its own, else empty.
  std::string token;
  NodeOffer offer;
};

/// Node 0 to a node: the job does not start (or the node is refused), why, and the exit
/// status to end with.
struct RefusalMessage {
  std::string error;
  int exit_code = 2;
};

/// Node 0 to a node: start a round of the job. The whole cluster, the node's tasks (with
/// their indices in the job), and the job's id, token and restart policy.
struct NodeStart {
  int round = 0;
  std::string job_id;
  std::string job_token;
  /// TF_CONFIG's "cluster" (JobPlan::cluster).
  est::distribute::ClusterSpec cluster;
  std::vector<TaskId> tasks;
  int max_restarts = 0;
  /// Node 0's --min-workers: 0, or the fewest training tasks of the whole job that train on
  /// when a worker is lost.
  int min_workers = 0;
  /// Node 0's --max-workers: 0, or the most training tasks the group may grow to.
  int max_workers = 0;
  double restart_backoff_secs = 1;
  double max_restart_backoff_secs = 60;
};

/// Node 0 to a node: stop your tasks, for `reason` (another host's task failed, ...).
struct StopMessage {
  std::string reason;
};

/// Node 0 to every node once a round has ended everywhere: whether the job starts again,
/// else the job's exit status and error.
struct VerdictMessage {
  bool restart = false;
  int exit_code = 1;
  std::string error;
};

/// A node to node 0: its tasks are being stopped, for `reason` (a task failed, a signal).
struct FailedMessage {
  std::string reason;
};

/// A node to node 0: how its tasks' round ended.
struct EndedMessage {
  int exit_code = 0;
  std::string error;
  /// Whether the node may start its tasks again (RoundResult::restartable).
  bool restartable = false;
};

/// A node to node 0 (--min-workers): its worker `task` failed, `restarting` alone or not.
struct LostMessage {
  TaskId task;
  bool restarting = false;
};

/// Either way: forward kFlightRecorderSignal to the tasks.
struct FlightRecorderMessage {};

/// One message of the protocol.
using NodeMessage = std::variant<HelloMessage, RefusalMessage, NodeStart, StopMessage, VerdictMessage, FailedMessage,
                                 EndedMessage, LostMessage, FlightRecorderMessage>;

/// The message as its line's JSON object.
nlohmann::json ToJson(const NodeMessage& message);

/// Reads one message; throws est::ConfigError naming what is wrong: "a malformed 'ended'
/// message: 'exit_code' is \"x\", not an integer in 0..255". A hello of another protocol
/// version, or a first message that is not a hello, reads as "expected the hello of est-launch
/// --node-rank (protocol version 4), got ...". A start's cluster must place each of its
/// tasks as TF_CONFIG would (est::distribute::MakeClusterConfig).
NodeMessage ParseNodeMessage(const nlohmann::json& json);

/// Reads a node's first message, which must be a hello of this protocol version; throws
/// est::ConfigError as ParseNodeMessage does, and for a message of another kind.
HelloMessage ParseHello(const nlohmann::json& json);

/// The kind of `message`, as its line names it: "hello", "start", "ended", ...
const char* KindOf(const NodeMessage& message);

/// Sends `message` on `channel`; false when the connection is gone (NodeChannel::Send).
bool SendMessage(NodeChannel& channel, const NodeMessage& message);

/// The messages that have arrived on `channel` (NodeChannel::Receive), read. A malformed one
/// closes the connection, its close reason saying what was wrong ("it sent a malformed ...");
/// the messages before it are returned.
std::vector<NodeMessage> ReceiveMessages(NodeChannel& channel);

}  // namespace est_launch
