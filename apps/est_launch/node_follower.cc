#include "apps/est_launch/node_follower.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <utility>
#include <vector>

#include "apps/est_launch/node_channel.h"
#include "apps/est_launch/node_messages.h"
#include "apps/est_launch/node_plan.h"
#include "apps/est_launch/node_session.h"
#include "apps/est_launch/signal_pipe.h"
#include "apps/est_launch/task_process.h"
#include "common/error.h"

namespace est_launch {
namespace node_session {
namespace {

using nlohmann::json;

// Node 1 and up: joins node 0, runs this host's tasks of the job, and follows node 0's
// stops and verdicts.
class Follower : public PeerNodes {
 public:
  Follower(const NodeOptions& node, LaunchOptions options) : node_(node), options_(std::move(options)) {}

  int Run() {
    const std::string rendezvous = JoinHostPort(node_.rendezvous_host, node_.rendezvous_port);
    const std::string me = "node " + std::to_string(node_.node_rank);
    while (true) {
      const auto start = Clock::now();
      const auto deadline = start + Secs(node_.rendezvous_timeout_secs);
      int stop_signal = 0;
      std::optional<NodeChannel> channel = NodeChannel::Connect(
          node_.rendezvous_host, node_.rendezvous_port, deadline, signals_.fd(),
          [&] { return (stop_signal = TakeStopSignal(signals_)) != 0; }, kProgressInterval,
          [&](const std::string& error) {
            Say(me + ": waiting for node 0 at " + rendezvous + " (" + error + "); " + Elapsed(start) + " of " +
                SecondsText(node_.rendezvous_timeout_secs) + " passed");
          });
      if (stop_signal != 0) return Interrupted(stop_signal);
      if (!channel) {
        Say("error: node 0 did not answer at " + rendezvous + " within " + SecondsText(node_.rendezvous_timeout_secs) +
            " (--rendezvous-timeout-secs)");
        return 1;
      }
      channel_ = std::move(*channel);
      stop_sent_ = false;
      stop_heard_ = false;
      const std::string host = node_.layout.host.empty() ? channel_.local_host() : node_.layout.host;
      const NodeOffer offer = MakeOffer(node_, host);
      SendMessage(channel_, HelloMessage{node_.min_nodes, node_.max_nodes,
                                         node_.token_from_environment ? options_.job_token : std::string(), offer});
      Say(me + ": joined node 0 at " + rendezvous + "; waiting for the job to start");
      // Node 0 answers by its own rendezvous timeout, which started before this one joined.
      const std::optional<NodeMessage> start_message =
          AwaitMessage(Clock::now() + Secs(node_.rendezvous_timeout_secs) + kEndReportMargin,
                       "the job to start (every node to join)");
      if (!start_message) return ended_;
      if (const auto* refusal = std::get_if<RefusalMessage>(&*start_message)) {
        Say("error: node 0 refused to start the job: " + refusal->error);
        return refusal->exit_code;
      }
      const NodeStart job = Expect<NodeStart>(*start_message, "the start of the job");
      const int round = job.round;
      TakeJobSettings(job, options_);
      const HostTasks spec(job.cluster, job.tasks, host, offer.first_port);
      const RoundResult result = RunHostTasks(node_, spec, options_, round, signals_, *this);
      SendMessage(channel_, EndedMessage{result.result.exit_code, result.result.error, result.restartable});
      const std::optional<NodeMessage> verdict_message =
          AwaitMessage(Clock::time_point::max(), "the other hosts to end");
      if (!verdict_message) return result.result.exit_code != 0 ? result.result.exit_code : ended_;
      const VerdictMessage verdict = Expect<VerdictMessage>(*verdict_message, "the verdict on the round");
      if (verdict.restart) {
        Say(me + ": node 0 restarts the job (" + verdict.error + "); joining again");
        channel_.Close("restarting");
        continue;
      }
      const int exit_code = result.result.exit_code != 0 ? result.result.exit_code : verdict.exit_code;
      if (exit_code != 0) Say("error: the job failed: " + verdict.error);
      return exit_code;
    }
  }

  std::vector<int> fds() const override {
    if (channel_.closed()) return {};
    return {channel_.fd()};
  }

  News OnReadable() override {
    News news;
    std::optional<std::string> reason;
    for (const NodeMessage& message : ReceiveMessages(channel_)) {
      if (const auto* stop = std::get_if<StopMessage>(&message)) reason = stop->reason;
      if (std::holds_alternative<FlightRecorderMessage>(message)) news.flight_recorder_signal = true;
    }
    if (!reason && channel_.closed())
      reason = "node 0's est-launch (" + channel_.peer() + ") is gone: " + channel_.close_reason();
    if (reason && !stop_heard_) {
      stop_heard_ = true;
      news.stop = reason;
    }
    return news;
  }

  void OnLocalStop(const std::string& reason) override {
    if (stop_sent_) return;
    stop_sent_ = true;
    SendMessage(channel_, FailedMessage{reason});
  }

  void OnLocalFlightRecorderSignal() override {
    if (!channel_.closed()) SendMessage(channel_, FlightRecorderMessage{});
  }

  std::optional<std::string> OnLocalLoss(const TaskId& task, bool restarting) override {
    if (!channel_.closed()) SendMessage(channel_, LostMessage{task, restarting});
    return std::nullopt;
  }

 private:
  int Interrupted(int signal_number) {
    Say("caught " + SignalName(signal_number) + " while waiting for node 0; exiting");
    return 128 + signal_number;
  }

  // `message` as a T, which node 0 sends as `what`; throws est::ConfigError naming the kind
  // it sent instead.
  template <typename T>
  T Expect(const NodeMessage& message, const char* what) const {
    const T* expected = std::get_if<T>(&message);
    EST_CHECK(expected != nullptr, est::ConfigError, channel_.peer(), " sent a '", KindOf(message), "' message where ",
              what, " was due (not est-launch of this version?)");
    return *expected;
  }

  // Waits for node 0's next message other than a stop (one that comes after this host's tasks
  // ended) or a flight-recorder signal, logging every 30 s that it waits for `what`. Returns
  // nothing, with ended_ set to the exit status, when node 0 is gone, the deadline passes or a
  // signal comes; throws est::ConfigError for a malformed message.
  std::optional<NodeMessage> AwaitMessage(Clock::time_point deadline, const std::string& what) {
    const auto start = Clock::now();
    auto next_report = start + kProgressInterval;
    while (true) {
      const std::optional<json> line = channel_.ReceiveOne(std::min(deadline, next_report), signals_.fd());
      if (line) {
        NodeMessage message;
        try {
          message = ParseNodeMessage(*line);
        } catch (const est::ConfigError& e) {
          EST_THROW(est::ConfigError, channel_.peer(), " sent ", e.what());
        }
        if (std::holds_alternative<StopMessage>(message) || std::holds_alternative<FlightRecorderMessage>(message))
          continue;
        return message;
      }
      if (const int signal_number = TakeStopSignal(signals_); signal_number != 0) {
        ended_ = Interrupted(signal_number);
        return std::nullopt;
      }
      if (channel_.closed()) {
        Say("error: node 0's est-launch (" + channel_.peer() + ") is gone while waiting for " + what + ": " +
            channel_.close_reason());
        ended_ = 1;
        return std::nullopt;
      }
      if (Clock::now() >= deadline) {
        Say("error: node 0 did not start the job within " + SecondsText(node_.rendezvous_timeout_secs) +
            " (--rendezvous-timeout-secs) and 30 s more");
        ended_ = 1;
        return std::nullopt;
      }
      if (Clock::now() >= next_report) {
        Say("node " + std::to_string(node_.node_rank) + ": waiting for " + what + "; " + Elapsed(start));
        next_report += kProgressInterval;
      }
    }
  }

  const NodeOptions& node_;
  LaunchOptions options_;
  SignalPipe signals_{SIGCHLD, SIGINT, SIGTERM, SIGHUP, kFlightRecorderSignal};
  NodeChannel channel_{-1, ""};
  bool stop_sent_ = false;   // this round's failure was sent to node 0
  bool stop_heard_ = false;  // this round's stop was passed to the supervisor
  int ended_ = 1;            // the exit status when AwaitMessage gives up
};

}  // namespace
}  // namespace node_session

int RunFollower(const NodeOptions& node, LaunchOptions options) {
  return node_session::Follower(node, std::move(options)).Run();
}

}  // namespace est_launch
