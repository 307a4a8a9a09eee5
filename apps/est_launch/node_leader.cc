#include "apps/est_launch/node_leader.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "apps/est_launch/node_channel.h"
#include "apps/est_launch/node_messages.h"
#include "apps/est_launch/node_plan.h"
#include "apps/est_launch/node_rendezvous.h"
#include "apps/est_launch/node_session.h"
#include "apps/est_launch/signal_pipe.h"
#include "apps/est_launch/task_process.h"
#include "common/error.h"

namespace est_launch {
namespace node_session {
namespace {

using nlohmann::json;

// Node 0: hosts the rendezvous, joins the offers into the job, relays stops between hosts
// and decides, after each round, whether the job starts again.
class Leader : public PeerNodes {
 public:
  Leader(const NodeOptions& node, LaunchOptions options)
      : node_(node), options_(std::move(options)),
        rendezvous_(JoinHostPort(node.rendezvous_host, node.rendezvous_port)),
        door_(node.rendezvous_host, node.rendezvous_port) {}

  int Run() {
    const std::string host = node_.layout.host.empty() ? node_.rendezvous_host : node_.layout.host;
    Say("node 0 of " + DescribeNodeCount(node_.min_nodes, node_.max_nodes) + ": waiting at " + rendezvous_ +
        " for the other nodes to join");
    for (int round = 0;; ++round) {
      members_.clear();
      members_.resize(static_cast<size_t>(node_.max_nodes));
      stop_reason_.reset();
      const NodeOffer own = MakeOffer(node_, host);
      if (!Gather(round)) return 128 + interrupted_;
      std::vector<NodeOffer> offers{own};
      for (size_t rank = 1; rank < members_.size(); ++rank)
        if (members_[rank]) offers.push_back(members_[rank]->offer);
      JobPlan plan;
      try {
        plan = PlanJob(offers, options_.min_workers, options_.max_workers);
      } catch (const est::ConfigError& e) {
        SendToRunning(RefusalMessage{e.what(), 2}, 0);  // the job will not start
        Say(std::string("error: ") + e.what());
        return 2;
      }
      most_training_tasks_ = options_.max_workers > 0 ? options_.max_workers : plan.training_tasks;
      cluster_ = plan.cluster;
      round_ = round;
      running_workers_.clear();
      for (size_t rank = 0; rank < plan.node_tasks.size(); ++rank) {
        for (const TaskId& task : plan.node_tasks[rank]) {
          if (task.type == TaskType::kWorker) running_workers_[task.index] = rank;
          if (rank > 0 && task.type == TaskType::kChief) members_[rank]->has_chief = true;
        }
        if (rank > 0 && members_[rank])
          SendMessage(members_[rank]->channel, MakeStart(options_, round, cluster_, plan.node_tasks[rank]));
      }
      const HostTasks spec(plan.cluster, plan.node_tasks[0], host, own.first_port);
      // A node that comes while the job runs is answered: under --min-workers, while this host's
      // tasks run, it brings workers to the training group; otherwise it is refused at once if
      // its rank runs, else it waits for the next rendezvous.
      answering_hellos_ = true;
      accepting_joins_ = options_.min_workers > 0;
      const RoundResult result = RunHostTasks(node_, spec, options_, round, signals_, *this);
      accepting_joins_ = false;
      AwaitEnds(result);
      answering_hellos_ = false;
      const bool failed = result.result.exit_code != 0 || stop_reason_.has_value();
      const std::string error = stop_reason_.value_or(result.result.error);
      const bool restart = failed && Restartable(result) && round < options_.max_restarts;
      const int exit_code = !failed                        ? 0
                            : interrupted_ != 0            ? 128 + interrupted_
                            : result.result.exit_code != 0 ? result.result.exit_code
                                                           : 1;
      for (auto& member : members_)
        if (member) SendMessage(member->channel, VerdictMessage{restart, exit_code, error});
      members_.clear();
      if (!restart) {
        if (failed) Say("error: the job failed: " + error);
        return exit_code;
      }
      Say(error + "; restarting the job on every host in " + SecondsText(RestartBackoffSecs(options_, round + 1)) +
          " (restart " + std::to_string(round + 1) + " of at most " + std::to_string(options_.max_restarts) +
          "), once every node has joined again");
    }
  }

  std::vector<int> fds() const override {
    std::vector<int> open;
    for (const auto& member : members_)
      if (member && !member->channel.closed()) open.push_back(member->channel.fd());
    if (answering_hellos_ && !stop_reason_) {
      for (int fd : door_.fds()) open.push_back(fd);
    }
    return open;
  }

  News OnReadable() override {
    News news;
    for (size_t rank = 1; rank < members_.size(); ++rank) {
      if (!members_[rank] || members_[rank]->channel.closed()) continue;
      Member& member = *members_[rank];
      const std::string name = "node " + std::to_string(rank);
      for (const NodeMessage& message : ReceiveMessages(member.channel)) {
        if (const auto* failed = std::get_if<FailedMessage>(&message)) {
          if (Stop(rank, name + ": " + failed->reason)) news.stop = stop_reason_;
        } else if (const auto* ended = std::get_if<EndedMessage>(&message)) {
          member.ended = *ended;
          if (ended->exit_code != 0 &&
              Stop(rank, name + ": " + (ended->error.empty() ? "its tasks failed" : ended->error)))
            news.stop = stop_reason_;
        } else if (std::holds_alternative<FlightRecorderMessage>(message)) {
          SendToRunning(FlightRecorderMessage{}, rank);
          news.flight_recorder_signal = true;
        } else if (const auto* lost = std::get_if<LostMessage>(&message)) {
          if (std::optional<std::string> stop = Lose(rank, lost->task, lost->restarting)) news.stop = stop;
        } else {
          member.channel.Close(std::string("it sent a '") + KindOf(message) + "' message, which only node 0 sends");
        }
      }
      if (!member.channel.closed() || member.ended) continue;
      const std::string gone =
          name + "'s est-launch (" + member.address + ") is gone: " + member.channel.close_reason();
      if (options_.min_workers > 0 && !member.has_chief) {
        if (std::optional<std::string> stop = LoseHost(rank, gone)) news.stop = stop;
      } else if (Stop(rank, gone)) {
        news.stop = stop_reason_;
      }
    }
    // After the members' news, so that one in the place of a node whose est-launch is gone
    // finds it gone. Once the job stops, a node that comes waits for the next rendezvous.
    if (answering_hellos_ && !stop_reason_) AcceptJoiningNodes();
    return news;
  }

  void OnLocalStop(const std::string& reason) override { Stop(0, "node 0: " + reason); }

  void OnLocalFlightRecorderSignal() override { SendToRunning(FlightRecorderMessage{}, 0); }

  std::optional<std::string> OnLocalLoss(const TaskId& task, bool restarting) override {
    return Lose(0, task, restarting);
  }

 private:
  struct Member {
    NodeChannel channel;
    std::string address;
    NodeOffer offer;
    std::optional<EndedMessage> ended;  // its report of its round's end
    bool has_chief = false;     // whether it runs the job's chief
  };

  // Records the job's stop, first reason only, and tells every host but `origin` to stop.
  bool Stop(size_t origin, const std::string& reason) {
    if (stop_reason_) return false;
    stop_reason_ = reason;
    SendToRunning(StopMessage{reason}, origin);
    return true;
  }

  // This round's chief and workers not lost (--min-workers): the chief, which the job cannot
  // lose, and the running workers (in a cluster without a chief job, worker 0 is its chief).
  int LiveTrainingTasks() const {
    return static_cast<int>(running_workers_.size()) + (cluster_.count(TaskTypeName(TaskType::kChief)) > 0 ? 1 : 0);
  }

  // Node `origin`'s worker `task` failed (--min-workers), `restarting` alone on its host or not.
  // Returns why every host's tasks stop when too few training tasks are left without it (every
  // other host is told so already), else nothing: the others train on.
  std::optional<std::string> Lose(size_t origin, const TaskId& task, bool restarting) {
    const std::string name = "node " + std::to_string(origin) + "'s " + task.label();
    const std::string min_workers = "--min-workers " + std::to_string(options_.min_workers);
    const int others = LiveTrainingTasks() - 1;
    if (restarting) {
      Say(name + " failed and starts again alone on its host; the job's " + std::to_string(others) +
          " other training tasks " +
          (others >= options_.min_workers ? "train on without it until it joins them (" + min_workers + ")"
                                          : "wait for it to join them, as they are fewer than " + min_workers));
      return std::nullopt;
    }
    running_workers_.erase(task.index);
    if (others >= options_.min_workers) {
      Say(name + " is lost; the job's " + std::to_string(others) + " other training tasks train on without it (" +
          min_workers + ")");
      return std::nullopt;
    }
    const std::string reason = name + " is lost, and the job's " + std::to_string(others) +
                               " training tasks left are fewer than " + min_workers;
    if (!Stop(0, reason)) return std::nullopt;  // the job stops already
    return reason;
  }

  // Node `rank`'s est-launch is `gone` (--min-workers): its workers were killed with it, or
  // its host is gone. Returns why every host's tasks stop when too few training tasks are left
  // without them (every other host is told so already), else nothing: the others train on.
  std::optional<std::string> LoseHost(size_t rank, const std::string& gone) {
    int lost = 0;
    for (auto worker = running_workers_.begin(); worker != running_workers_.end();)
      worker = worker->second == rank ? (++lost, running_workers_.erase(worker)) : std::next(worker);
    const int left = LiveTrainingTasks();
    const std::string min_workers = "--min-workers " + std::to_string(options_.min_workers);
    if (left >= options_.min_workers) {
      Say(gone + "; its " + std::to_string(lost) + " worker(s) are lost, and the job's " + std::to_string(left) +
          " other training tasks train on without them (" + min_workers + ")");
      return std::nullopt;
    }
    const std::string reason = gone + "; with its " + std::to_string(lost) + " worker(s) lost, the job's " +
                               std::to_string(left) + " training tasks left are fewer than " + min_workers;
    if (!Stop(rank, reason)) return std::nullopt;  // the job stops already
    return reason;
  }

  // Sends `message` to every other host but `origin` whose tasks have not ended.
  void SendToRunning(const NodeMessage& message, size_t origin) {
    for (size_t rank = 1; rank < members_.size(); ++rank)
      if (rank != origin && members_[rank] && !members_[rank]->ended) SendMessage(members_[rank]->channel, message);
  }

  // The nodes the job cannot start without (ranks 1 .. min_nodes - 1) that have not joined.
  std::vector<int> Missing() const {
    std::vector<int> missing;
    for (size_t rank = 1; rank < static_cast<size_t>(node_.min_nodes); ++rank)
      if (!members_[rank]) missing.push_back(static_cast<int>(rank));
    return missing;
  }

  // Waits until every node the job needs has joined (and takes the others that come meanwhile);
  // false when est-launch caught a stop signal first.
  bool Gather(int round) {
    const auto start = Clock::now();
    const auto deadline = start + Secs(node_.rendezvous_timeout_secs);
    auto next_report = start + kProgressInterval;
    const std::string of = " of " + DescribeNodeCount(node_.min_nodes, node_.max_nodes);
    // The nodes that came while the last round ran, in the place of one that was gone.
    for (auto& [channel, message] : std::exchange(deferred_, {}))
      if (!channel.closed()) Admit(std::move(channel), message);
    while (!Missing().empty()) {
      const auto now = Clock::now();
      if (now >= deadline) {
        const std::string why = DescribeNodes(Missing()) + of + " did not join at " + rendezvous_ + " within " +
                                SecondsText(node_.rendezvous_timeout_secs) + " (--rendezvous-timeout-secs)" +
                                (round > 0 ? " after restart " + std::to_string(round) : "");
        SendToRunning(RefusalMessage{why, 1}, 0);
        EST_THROW(est::TimeoutError, why);
      }
      if (now >= next_report) {
        Say("waiting for " + DescribeNodes(Missing()) + of + " to join at " + rendezvous_ + "; " + Elapsed(start) +
            " of " + SecondsText(node_.rendezvous_timeout_secs) + " passed");
        next_report += kProgressInterval;
      }
      std::vector<int> fds = door_.fds();
      fds.push_back(signals_.fd());
      const auto wake = std::min({deadline, next_report, door_.next_deadline().value_or(deadline)});
      for (int fd : this->fds()) fds.push_back(fd);
      WaitReadable(fds, wake);
      if ((interrupted_ = TakeStopSignal(signals_)) != 0) {
        const std::string why = "node 0's est-launch caught " + SignalName(interrupted_) + " before the job started";
        SendToRunning(RefusalMessage{why, 128 + interrupted_}, 0);
        Say("caught " + SignalName(interrupted_) + " while waiting for the other nodes; not starting the job");
        return false;
      }
      door_.Take([this](NodeChannel channel, const json& message) { Admit(std::move(channel), message); });
      for (size_t rank = 1; rank < members_.size(); ++rank) {
        if (!members_[rank] || (members_[rank]->channel.Receive(), !members_[rank]->channel.closed())) continue;
        Say("node " + std::to_string(rank) + " (" + members_[rank]->address + ") left before the job started (" +
            members_[rank]->channel.close_reason() + "); waiting for it to join again");
        members_[rank].reset();
      }
    }
    return true;
  }

  // Before the job starts: a node whose hello fits, at a rank not taken, becomes a member.
  void Admit(NodeChannel channel, const json& message) {
    const std::optional<NodeOffer> offer = CheckHello(channel, message, node_, options_.job_token);
    if (!offer) return;
    std::optional<Member>& slot = members_[static_cast<size_t>(offer->node_rank)];
    if (slot) {
      RefuseTakenRank(channel, offer->node_rank, slot->address);
      return;
    }
    const std::string address = channel.peer();
    Say("node " + std::to_string(offer->node_rank) + " joined from " + address + " (" +
        std::to_string(offer->layout.num_tasks()) + " task(s) on " +
        JoinHostPort(offer->layout.host, offer->first_port) +
        "...)");
    slot = Member{std::move(channel), address, *offer, std::nullopt};
  }

  // While the job runs: takes the nodes that come to join it (--min-workers), or answers them.
  void AcceptJoiningNodes() {
    door_.Take([this](NodeChannel channel, const json& message) {
      if (accepting_joins_) {
        AdmitJoining(std::move(channel), message);
      } else {
        AnswerWhileRunning(std::move(channel), message);
      }
    });
  }

  // While a job runs and takes no node (without --min-workers, or once this host's tasks have
  // ended): a node at a rank whose est-launch runs is refused (a --node-rank given twice); one in
  // the place of a node whose est-launch is gone (the job stops and may restart) joins at the
  // next rendezvous.
  void AnswerWhileRunning(NodeChannel channel, const json& message) {
    const std::optional<NodeOffer> offer = CheckHello(channel, message, node_, options_.job_token);
    if (!offer) return;
    const std::optional<Member>& slot = members_[static_cast<size_t>(offer->node_rank)];
    if (slot && !slot->channel.closed()) {
      RefuseTakenRank(channel, offer->node_rank, slot->address);
      return;
    }
    deferred_.push_back({std::move(channel), message});
  }

  // While the job runs (--min-workers): a node whose hello fits, at a rank that is free or
  // whose est-launch is gone, brings its workers to the training group while it has room.
  void AdmitJoining(NodeChannel channel, const json& message) {
    const std::optional<NodeOffer> offer = CheckHello(channel, message, node_, options_.job_token);
    if (!offer) return;
    const std::string name = "node " + std::to_string(offer->node_rank);
    std::optional<Member>& slot = members_[static_cast<size_t>(offer->node_rank)];
    if (slot && (!slot->channel.closed() || slot->ended)) {
      RefuseTakenRank(channel, offer->node_rank, slot->address);
      return;
    }
    if (LiveTrainingTasks() + offer->layout.workers > most_training_tasks_) {
      RefuseNode(channel, "the job runs " + std::to_string(LiveTrainingTasks()) + " training tasks of its most " +
                              std::to_string(most_training_tasks_) + " (node 0's --max-workers): the " +
                              std::to_string(offer->layout.workers) + " worker(s) of " + name + " do not fit");
      return;
    }
    std::set<int> taken;
    for (const auto& [index, rank] : running_workers_) taken.insert(index);
    std::vector<TaskId> tasks;
    try {
      tasks = PlanJoiningNode(*offer, taken, cluster_);
    } catch (const est::ConfigError& e) {
      RefuseNode(channel, e.what());
      return;
    }
    std::string named;
    for (const TaskId& task : tasks) {
      running_workers_[task.index] = static_cast<size_t>(offer->node_rank);
      named += (named.empty() ? "" : ", ") + task.label();
    }
    const std::string address = channel.peer();
    Say(name + " joined the running job from " + address + ": " + named + " join the training group, which has " +
        std::to_string(LiveTrainingTasks()) + " training tasks with them");
    slot = Member{std::move(channel), address, *offer, std::nullopt, false};
    SendMessage(slot->channel, MakeStart(options_, round_, cluster_, tasks));
  }

  // After this host's round: waits for every other host to report its end. While the job
  // runs on, without bound (node 0's connection to each host finds it gone); once it stops,
  // for the grace and 30 s more.
  void AwaitEnds(const RoundResult& own) {
    if (own.result.exit_code != 0) Stop(0, "node 0: " + own.result.error);
    const auto start = Clock::now();
    auto next_report = start + kProgressInterval;
    std::optional<Clock::time_point> deadline;
    while (true) {
      std::vector<int> waiting;
      for (size_t rank = 1; rank < members_.size(); ++rank)
        if (members_[rank] && !members_[rank]->channel.closed() && !members_[rank]->ended)
          waiting.push_back(static_cast<int>(rank));
      if (waiting.empty()) return;
      if (stop_reason_ && !deadline) deadline = Clock::now() + Secs(options_.grace_secs) + kEndReportMargin;
      if (deadline && Clock::now() >= *deadline) {
        for (int rank : waiting) {
          Stop(static_cast<size_t>(rank), "node " + std::to_string(rank) + " did not report the end of its tasks");
          members_[static_cast<size_t>(rank)]->channel.Close("it did not report the end of its tasks in time");
        }
        return;
      }
      if (Clock::now() >= next_report) {
        Say("this host's tasks have ended; waiting for " + DescribeNodes(waiting) + " to end (" + Elapsed(start) + ")");
        next_report += kProgressInterval;
      }
      std::vector<int> fds = this->fds();
      fds.push_back(signals_.fd());
      WaitReadable(fds, deadline ? std::min(*deadline, next_report) : next_report);
      if (const int signal_number = TakeStopSignal(signals_); signal_number != 0 && interrupted_ == 0) {
        interrupted_ = signal_number;
        Stop(0, "node 0's est-launch caught " + SignalName(signal_number));
      }
      OnReadable();
    }
  }

  // Whether every host may start again: none was interrupted or left processes behind.
  bool Restartable(const RoundResult& own) const {
    if (interrupted_ != 0 || (own.result.exit_code != 0 && !own.restartable)) return false;
    for (const auto& member : members_)
      if (member && member->ended && member->ended->exit_code != 0 && !member->ended->restartable)
        return false;
    return true;  // a host whose est-launch is gone may come back: it joins the next round
  }

  const NodeOptions& node_;
  LaunchOptions options_;
  const std::string rendezvous_;  // --rendezvous, as "host:port"
  SignalPipe signals_{SIGCHLD, SIGINT, SIGTERM, SIGHUP, kFlightRecorderSignal};
  RendezvousDoor door_;                         // the rendezvous' listener and the connections not yet heard
  std::vector<std::optional<Member>> members_;  // by node rank; 0 is this host
  std::optional<std::string> stop_reason_;      // why this round's tasks stop on every host
  int interrupted_ = 0;                         // the stop signal node 0 caught
  int most_training_tasks_ = 0;                 // how many the group may hold (--max-workers, else the plan's)
  std::map<int, size_t> running_workers_;       // the node of each worker index not lost (--min-workers)
  est::distribute::ClusterSpec cluster_;        // this round's TF_CONFIG cluster, with the nodes that joined it
  int round_ = 0;                               // this round's number
  bool answering_hellos_ = false;               // nodes that come while the job runs are answered
  bool accepting_joins_ = false;                // and join it (--min-workers, while this host's tasks run)
  std::vector<std::pair<NodeChannel, json>> deferred_;  // hellos for the next rendezvous (no --min-workers)
};

}  // namespace
}  // namespace node_session

int RunLeader(const NodeOptions& node, LaunchOptions options) {
  return node_session::Leader(node, std::move(options)).Run();
}

}  // namespace est_launch
