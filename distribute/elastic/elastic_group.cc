#include "distribute/elastic/elastic_group.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/collective/collective.h"
#include "distribute/elastic/beat_watch.h"
#include "distribute/elastic/member_heartbeat.h"
#include "distribute/elastic/membership.h"
#include "distribute/elastic/shard_dealing.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/settings_agreement.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {
namespace {

// How often the chief asks its store whether a newcomer waits: a store call every step would
// cost a short step a fraction of its time.
constexpr std::chrono::milliseconds kNewcomerCheckInterval(200);
// How often a member of the training group beats (the beat lease is how long the chief waits
// for one).
constexpr std::chrono::milliseconds kBeatInterval(500);

// Whether `failure` is a collective's for a lost or silent peer.
bool IsLostPeer(const Error& failure) {
  return dynamic_cast<const CommunicationError*>(&failure) != nullptr ||
         dynamic_cast<const TimeoutError*>(&failure) != nullptr;
}

}  // namespace

// The membership and this worker's generation, once start() took the group's keys.
struct ElasticGroup::State {
  State(std::shared_ptr<Store> group_store, Membership member) : store(std::move(group_store)), membership(member) {}

  std::shared_ptr<Store> store;  ///< the job's training-group keys in the chief's store
  Membership membership;
  Generation generation;
  Entry entry = Entry::kAtStart;
  std::chrono::steady_clock::time_point next_newcomer_check;
  std::optional<BeatWatch> beats;              ///< on the chief: the members' beats, read by the heartbeat's thread
  std::mutex watched_mutex;                    ///< guards the four below, which the heartbeat's thread uses
  Generation watched_generation;               ///< the generation trained in
  std::shared_ptr<Collective> watched;         ///< its collective; null while the group re-forms
  int64_t cut_generation = 0;                  ///< the generation this worker cut ranks off, if any
  std::vector<int> cut_ranks;                  ///< those ranks: lost, when the group re-forms
  std::unique_ptr<MemberHeartbeat> heartbeat;  ///< while this worker trains in the group
};

ElasticGroup::ElasticGroup(ElasticGroupOptions options, GenerationCollectives& collectives,
                           std::function<void()> connect)
    : options_(std::move(options)), collectives_(collectives), connect_(std::move(connect)) {}

// state_ is destroyed first of the members, and the heartbeat's thread with it.
ElasticGroup::~ElasticGroup() = default;

bool ElasticGroup::start(std::shared_ptr<Store> store) {
  MembershipOptions membership;
  membership.member = options_.member;
  membership.coordinator = options_.is_chief;
  membership.min_members = options_.min_workers;
  membership.max_members = options_.max_workers;
  membership.settle = options_.timeout;
  membership.beat_lease = options_.beat_lease;
  membership.beat_interval = kBeatInterval;
  membership.timeout = options_.timeout;
  state_ = std::make_unique<State>(store, Membership(store, membership));
  if (options_.is_chief) state_->beats.emplace(store, options_.beat_lease, kBeatInterval);
  start_heartbeat();
  // The first generation closed, so the rendezvous did without this worker: it is new.
  if (options_.is_chief || !store->check({"membership/latest"})) return false;
  join_running();
  return true;
}

void ElasticGroup::form_first() {
  // Before the generation closes: a newcomer that finds it closed finds the settings too.
  if (options_.is_chief) PublishGroupSettings(*state_->store, options_.settings);
  state_->generation = state_->membership.JoinFirstAt(options_.rank, options_.world_size);
  watch_generation(true);
}

void ElasticGroup::join_running() {
  CheckGroupSettings(*state_->store, options_.settings, options_.timeout);
  Log().info("In-job recovery: the job is training; {} joins its group as a newcomer", options_.member);
  std::optional<Generation> generation = state_->membership.JoinAsNewcomer();
  if (!generation) {
    state_->entry = Entry::kTrainingEnded;
    Log().info("In-job recovery: its training ended before {} could join", options_.member);
    return;
  }
  state_->entry = Entry::kJoinedRunning;
  state_->generation = std::move(*generation);
  connect_generation();
  watch_generation(true);
}

ElasticGroup::Entry ElasticGroup::enter() {
  connect_();
  start_heartbeat();  // again, for a later training in the same group (end() stopped the beats)
  const Entry entry = state_->entry;
  if (entry == Entry::kJoinedRunning) state_->entry = Entry::kAtStart;  // a later run starts with it
  return entry;
}

bool ElasticGroup::newcomer_waiting() {
  if (!options_.is_chief || !state_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < state_->next_newcomer_check) return false;
  state_->next_newcomer_check = now + kNewcomerCheckInterval;
  return state_->membership.NewcomerWaiting(state_->generation);
}

int ElasticGroup::max_workers() const { return std::max(options_.max_workers, options_.world_size); }

bool ElasticGroup::recovers_from(const Error& failure) const { return IsLostPeer(failure); }

void ElasticGroup::reform(Change change, const std::function<void()>& release, const std::function<void()>& attempt) {
  std::exception_ptr failure = std::current_exception();
  EST_ASSERT(failure || change != Change::kLostWorker, "the group re-forms for a lost worker while handling its failure");
  release();
  bool formed = true;
  if (change == Change::kLostWorker) {
    formed = regroup();
  } else if (change == Change::kNewcomers) {
    Log().info("In-job recovery: a newcomer waits to join generation {} of the training group: re-forming it with every "
               "member",
               state_->generation.number);
    form_next_generation({});
  }
  while (true) {
    if (!formed) std::rethrow_exception(failure);
    try {
      attempt();
      return;
    } catch (const Error& again) {
      if (!recovers_from(again)) throw;
      failure = std::current_exception();
      Log().warn("Re-forming the training group failed: {}", again.what());
    }
    release();
    formed = regroup();
  }
}

bool ElasticGroup::regroup() {
  std::vector<int> lost;
  if (const std::shared_ptr<Collective> failed = collective()) lost = failed->lost_ranks();
  {
    // The ranks cut off are lost too, though the failed call names only the first (or, across
    // hosts, a host's leader): the next generation does not wait a lease for the others.
    const std::lock_guard<std::mutex> lock(state_->watched_mutex);
    if (state_->cut_generation == state_->generation.number)
      lost.insert(lost.end(), state_->cut_ranks.begin(), state_->cut_ranks.end());
  }
  std::sort(lost.begin(), lost.end());
  lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
  if (!lost.empty() && lost.front() == 0) {
    Log().error(
        "In-job recovery: the chief was lost, and its store held the training group: the training ends "
        "(est-launch --max-restarts restarts the job from its last checkpoint)");
    return false;
  }
  std::string named;
  for (int rank : lost) named += (named.empty() ? "" : ", ") + std::to_string(rank);
  Log().warn("In-job recovery: generation {} of the training group lost {}; re-forming it without {}",
             state_->generation.number,
             named.empty() ? "a worker it could not name" : "rank " + named,
             named.empty()      ? "the workers that do not arrive within the timeout"
             : lost.size() == 1 ? "it"
                                : "them");
  form_next_generation(lost);
  return true;
}

void ElasticGroup::form_next_generation(const std::vector<int>& lost) {
  // A second worker may die after the first: the chief stops waiting for it once its process
  // has exited (ranks on this host), rather than after the timeout.
  std::function<std::vector<int>()> lost_later;
  if (const std::shared_ptr<Collective> failed = collective()) lost_later = failed->lost_ranks_watch();
  watch_generation(false);
  // Closing this worker's connections ends the calls of peers still waiting on it: every
  // worker of a failed generation learns of the loss and re-forms the group too. Nothing else
  // may hold the failed collective then.
  collectives_.close_generation();
  std::vector<int> left_out = lost;
  while (true) {
    state_->generation = state_->membership.Rejoin(state_->generation, left_out, lost_later);
    try {
      connect_generation();
      break;
    } catch (const Error& failure) {
      // A member of the new generation was lost before it connected: the next one forms
      // without the members that do not come back within the settle time.
      if (!IsLostPeer(failure)) throw;
      Log().warn("In-job recovery: connecting generation {} of the training group failed: {}", state_->generation.number,
                 failure.what());
      collectives_.close_generation();
      left_out.clear();
      lost_later = nullptr;
    }
  }
  watch_generation(true);
  Log().warn("In-job recovery: training on as worker {} of {} (generation {})", state_->generation.rank,
             state_->generation.world_size(), state_->generation.number);
}

bool ElasticGroup::rejoined_as_newcomer() const { return state_ && state_->generation.newcomer; }

void ElasticGroup::end() {
  if (!state_) return;
  // The group re-forms no more: a beat to a chief that exits first would only delay this exit.
  state_->heartbeat.reset();
  watch_generation(false);
  if (options_.is_chief) state_->membership.Finish(state_->generation);
}

void ElasticGroup::beat() {
  Membership& membership = state_->membership;
  membership.Beat();
  Generation generation;
  std::shared_ptr<Collective> watched;
  {
    const std::lock_guard<std::mutex> lock(state_->watched_mutex);
    if (state_->watched == nullptr) return;
    generation = state_->watched_generation;
    watched = state_->watched;
  }
  // The chief decides whom to cut off; every other member follows it, since a call of its own
  // may wait on the silent rank too.
  std::vector<int> cut;
  if (state_->beats) {
    const std::vector<std::string> others(generation.members.begin() + 1, generation.members.end());
    for (const BeatWatch::Silent& silent : state_->beats->Read(others)) {
      const auto rank = static_cast<int>(
          std::find(generation.members.begin(), generation.members.end(), silent.member) - generation.members.begin());
      Log().warn(
          "In-job recovery: rank {} ('{}') of generation {} has not beaten for {} (its host is gone or cut "
          "off, or it is stopped): cutting it off, so that the group re-forms without it now rather than after "
          "timeout_secs",
          rank, silent.member, generation.number, DescribeDuration(silent.silent_for));
      cut.push_back(rank);
    }
    if (!cut.empty()) membership.CutOff(generation, cut);
  } else {
    cut = membership.CutOffRanks(generation);
    if (!cut.empty())
      Log().warn("In-job recovery: the chief cut off {} of generation {}, silent: so does this worker",
                 DescribeRanks(cut), generation.number);
  }
  if (cut.empty()) return;
  {
    // Once: the generation ends with the call that fails.
    const std::lock_guard<std::mutex> lock(state_->watched_mutex);
    if (state_->watched != watched) return;
    state_->watched.reset();
    state_->cut_generation = generation.number;
    state_->cut_ranks = cut;
  }
  watched->cut_off(cut);
  collectives_.cut_off_others(cut);
}

void ElasticGroup::watch_generation(bool training) {
  const std::shared_ptr<Collective> trained_in = training ? collective() : nullptr;
  const std::lock_guard<std::mutex> lock(state_->watched_mutex);
  state_->watched_generation = training ? state_->generation : Generation{};
  state_->watched = trained_in;
}

void ElasticGroup::start_heartbeat() {
  if (!state_->heartbeat) state_->heartbeat = std::make_unique<MemberHeartbeat>([this] { beat(); }, kBeatInterval);
}

void ElasticGroup::connect_generation() {
  const Generation& generation = state_->generation;
  collectives_.connect_generation(generation.rank, generation.world_size(),
                                  CreatePrefixStore("generation/" + std::to_string(generation.number), state_->store));
}

std::shared_ptr<Collective> ElasticGroup::collective() { return collectives_.generation_collective(); }

void ElasticGroup::take_chief_counters(std::vector<int64_t>& counters, std::vector<double>& values) {
  const std::shared_ptr<Collective> members = collective();
  if (members == nullptr) return;
  at::Tensor exact = at::tensor(counters, at::kLong);
  members->broadcast(exact, 0);
  std::memcpy(counters.data(), exact.data_ptr<int64_t>(), counters.size() * sizeof(int64_t));
  if (values.empty()) return;
  at::Tensor floating = at::tensor(values, at::kDouble);
  members->broadcast(floating, 0);
  std::memcpy(values.data(), floating.data_ptr<double>(), values.size() * sizeof(double));
}

void ElasticGroup::take_chief_blobs(std::vector<std::string>& blobs) {
  const std::shared_ptr<Collective> members = collective();
  if (members == nullptr) return;
  for (std::string& bytes : blobs) {
    at::Tensor size = at::scalar_tensor(static_cast<int64_t>(bytes.size()), at::kLong).reshape({1});
    members->broadcast(size, 0);
    // In 64-bit words: every backend carries int64.
    const auto length = static_cast<size_t>(size.item<int64_t>());
    at::Tensor words = at::zeros({static_cast<int64_t>((length + 7) / 8)}, at::kLong);
    if (members->rank() == 0) std::memcpy(words.data_ptr(), bytes.data(), length);
    members->broadcast(words, 0);
    bytes.assign(static_cast<const char*>(words.data_ptr()), length);
  }
}

std::vector<int> ElasticGroup::deal_shards(int logical_shards, const std::vector<int>& held) {
  const std::shared_ptr<Collective> members = collective();
  const int rank = members ? members->rank() : 0;
  const int workers = members ? members->world_size() : 1;
  // Every shard's holder (rank + 1, summed over the members), then how many hold it.
  at::Tensor holdings = at::zeros({2 * logical_shards}, at::kLong);
  auto mine = holdings.accessor<int64_t, 1>();
  for (int shard : held) {
    mine[shard] = rank + 1;
    mine[logical_shards + shard] = 1;
  }
  if (members) members->allreduce(holdings, ReduceOp::kSum);
  const auto summed = holdings.accessor<int64_t, 1>();
  std::vector<int> holders(static_cast<size_t>(logical_shards), -1);
  for (int shard = 0; shard < logical_shards; ++shard) {
    const int64_t count = summed[logical_shards + shard];
    EST_ASSERT(count <= 1, "logical shard ", shard, " is held by ", count, " workers");
    if (count == 1) holders[static_cast<size_t>(shard)] = static_cast<int>(summed[shard] - 1);
  }
  return DealLogicalShards(holders, workers)[static_cast<size_t>(rank)];
}

void ElasticGroup::barrier() {
  if (const std::shared_ptr<Collective> members = collective()) members->barrier();
}

}  // namespace est::distribute
