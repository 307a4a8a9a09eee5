#pragma once
/// ElasticGroup: the lifecycle of a training group that survives a lost worker and takes in
/// new ones (in-job recovery), as torchrun's elastic agent and rendezvous do for a job. It
/// holds the membership generations in the chief's store, the members' heartbeats and the
/// beat lease, the cut-off of a silent member, newcomers and their admission, the dealing of
/// logical input shards after a change of members, and the healing of a worker from the chief.
/// A strategy that recovers lost workers owns one and lends it through Strategy::elastic().

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace est {
class Error;
}  // namespace est

namespace est::distribute {

class Collective;
class Store;
using StrategySettings = std::vector<std::pair<std::string, std::string>>;

/// What the strategy whose workers form the group does for it: the collectives of the
/// generation this worker trains in.
class GenerationCollectives {
 public:
  virtual ~GenerationCollectives() = default;
  /// Connects this worker's collectives in a generation of `world_size` workers where it is
  /// `rank`, over `store` (the generation's keys); its place in the training becomes that.
  virtual void connect_generation(int rank, int world_size, std::shared_ptr<Store> store) = 0;
  /// Closes the collectives of the generation that failed: peers still waiting on this worker
  /// learn of the failure too.
  virtual void close_generation() = 0;
  /// The gradients' collective of the generation trained in; null in a generation of one.
  /// Whoever holds it must let go before close_generation(), which ends it.
  virtual std::shared_ptr<Collective> generation_collective() = 0;
  /// Cuts `ranks` off the generation's collectives other than generation_collective()
  /// (model_fn's), unless one is being connected.
  virtual void cut_off_others(const std::vector<int>& ranks) = 0;
};

/// Options of an ElasticGroup.
struct ElasticGroupOptions {
  /// This process in the job, unique to it: "worker 2, pid 4711 on host-b".
  std::string member;
  /// Whether this worker is the chief: it serves the store and closes every generation.
  bool is_chief = false;
  /// This worker's rank and the training workers of the cluster: the first generation's.
  int rank = 0;
  int world_size = 1;
  /// The fewest workers the group trains on with (in-job recovery's min_workers).
  int min_workers = 1;
  /// The most the group may hold: workers started later join while it holds fewer.
  int max_workers = 1;
  /// How long the chief waits for a member's beat before it cuts that member off.
  std::chrono::milliseconds beat_lease = std::chrono::seconds(5);
  /// The limit on forming a generation and on a member's wait for it to close.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// What every worker must share; a newcomer checks its own against the group's.
  StrategySettings settings;
};

/// A training group whose members may change while it trains. Made by the strategy before it
/// connects; start() and form_first() run while the strategy connects, everything else is the
/// training loop's.
class ElasticGroup {
 public:
  /// How this worker entered the group (enter()).
  enum class Entry {
    kAtStart,        ///< with the others, when the training started
    kJoinedRunning,  ///< into a group already training, whose state it takes from the chief
    kTrainingEnded,  ///< not at all: the group's training ended before it could join
  };
  /// What re-forms the group (reform()).
  enum class Change {
    kLostWorker,  ///< a collective call failed for a lost or silent member
    kNewcomers,   ///< between steps, newcomers wait to join (the step's flags said so)
    kJoined,      ///< none: this worker joined a running group as a newcomer
  };

  /// `collectives` is the strategy's, which outlives the group. `connect` connects this worker
  /// to the job (the strategy's rendezvous, which calls start() and form_first()), once.
  ElasticGroup(ElasticGroupOptions options, GenerationCollectives& collectives, std::function<void()> connect);
  ~ElasticGroup();
  ElasticGroup(const ElasticGroup&) = delete;
  ElasticGroup& operator=(const ElasticGroup&) = delete;

  /// While the strategy connects, before the job's rendezvous: takes the group's keys in the
  /// chief's `store` and starts beating. True where the group already trains (its first
  /// generation closed): this worker then joined it as a newcomer, or found its training
  /// ended, and skips the rendezvous.
  bool start(std::shared_ptr<Store> store);
  /// After the rendezvous, every worker connected: the first generation, of the cluster's workers.
  void form_first();

  /// Connects this worker to the group, waiting until the group takes it in, and says how it
  /// entered.
  Entry enter();
  /// On the chief, at most every 0.2 s: whether a newcomer waits to join. False elsewhere.
  bool newcomer_waiting();
  /// The most workers the group may hold.
  int max_workers() const;
  /// Whether the training goes on after `failure`, a collective call's for a lost or silent
  /// member (CommunicationError, TimeoutError): the group then re-forms without it.
  bool recovers_from(const Error& failure) const;
  /// Re-forms the group for `change` and runs `attempt` in it (the training's side: taking the
  /// chief's state, dealing the input). Where a member is lost meanwhile, `attempt` fails and
  /// the group re-forms again without it. `release` drops what refers to the old group's
  /// collectives; it runs before each re-forming. Rethrows the failure being handled where the
  /// group cannot re-form (the chief was lost).
  void reform(Change change, const std::function<void()>& release, const std::function<void()>& attempt);
  /// After reform(): whether the group took this worker as a newcomer, holding none of the
  /// group's input (it re-formed without this worker while it was stopped or hung).
  bool rejoined_as_newcomer() const;
  /// On the chief, after the training's last barrier: newcomers that wait, or come later, learn
  /// that the training ended (enter() gives kTrainingEnded). Beats stop.
  void end();

  /// Makes `counters` and `values` the chief's on every member: the training's counters (exact
  /// int64) and floating values (the loss scale). Part of healing a re-formed group.
  void take_chief_counters(std::vector<int64_t>& counters, std::vector<double>& values);
  /// Makes each of `blobs` (serialized state: an optimizer's) the chief's on every member.
  void take_chief_blobs(std::vector<std::string>& blobs);
  /// The logical input shards this worker reads in the re-formed group: those it `held` (and
  /// still holds on return), with the shards no member holds dealt to those holding fewest,
  /// alike on every member (DealLogicalShards).
  std::vector<int> deal_shards(int logical_shards, const std::vector<int>& held);
  /// Returns once every member has called it.
  void barrier();

 private:
  struct State;  // the membership, the generations and the heartbeat (distribute/rendezvous)
  /// A worker that finds the group training: joins it as a newcomer, if it still trains.
  void join_running();
  /// After a failed collective call: forms the next generation without the members it lost.
  /// False where the chief was lost.
  bool regroup();
  /// Forms the next generation without the ranks `lost` and with the newcomers waiting.
  void form_next_generation(const std::vector<int>& lost);
  /// Starts beating, unless this worker beats already.
  void start_heartbeat();
  /// Connects the strategy's collectives of the generation this worker is in, over its keys.
  void connect_generation();
  /// The heartbeat's work: this worker's beat; on the chief, the cut-off of silent members.
  void beat();
  /// Makes the generation trained in the one beat() watches; none while the group re-forms.
  void watch_generation(bool training);
  /// The generation's collective; null in a generation of one.
  std::shared_ptr<Collective> collective();

  ElasticGroupOptions options_;
  GenerationCollectives& collectives_;
  std::function<void()> connect_;
  std::unique_ptr<State> state_;
};

}  // namespace est::distribute
