#include "distribute/rendezvous/rendezvous.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/poll.h"
#include "distribute/rendezvous/store.h"

// Keys, in the store given to Rendezvous:
//   rendezvous/job_claims           counter; the rank that takes it to 1 records its job id
//   rendezvous/job_id               the id of the job that owns the store
//   <job>/rendezvous/generation     the round that ranks join now
//   <job>/rendezvous/<g>/rank/<i>   counter: how often a process of rank i joined round g
//   <job>/rendezvous/<g>/closed     counter; the rank that takes it to 1 advances the generation
//   <job>/rendezvous/<g>/abandoned  set by a rank that timed out in round g, before it closes it
//   <job>/<g>/...                   the returned view of the store, private to round g
//
// A round is closed once, by the first rank that finds it complete (every rank key set),
// timed out, or joined twice by one rank. Closing advances the generation, so rounds close
// in order and "generation" always names the one round still open. A rank arriving later
// (a restarted job, a new collective over the same store) joins the next round, whose keys
// no stale process has set. A rank that joins a round twice (a restarted process whose
// earlier incarnation joined before dying) closes it, and every rank still waiting there
// moves to the next round, so they all meet again in it. A rank that times out abandons
// its round: every rank waiting in it fails at once, naming the same missing ranks.
//
// A rank of another job touches none of the owner's keys and fails. (The chief's gRPC store
// refuses such a rank before it reaches this check, and logs it with its address.)
//
// A process that dies after joining still counts as arrived: when the others complete the
// round before it restarts, the round succeeds without it, and the collective built on the
// round then fails to connect to it (TimeoutError naming it).

namespace est::distribute {
namespace {

constexpr char kJobClaimsKey[] = "rendezvous/job_claims";
constexpr char kJobIdKey[] = "rendezvous/job_id";
// How long a waiting rank waits for the others between checks that its round is still open.
constexpr std::chrono::milliseconds kWaitSlice(50);

std::chrono::milliseconds Remaining(std::chrono::steady_clock::time_point deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  return std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(left));
}

// Ends the wait for the other ranks at once when a stop signal is pending (est-launch stops
// the job, Ctrl-C): a rank never waits out its timeout after it was asked to stop.
void StopIfSignalled(const RendezvousOptions& options) {
  if (const int signal_number = StopSignalGuard::pending())
    throw Interrupted(est::Concat("rendezvous of job '", options.job_id, "' (rank ", options.rank,
                                     ") stopped by ", StopSignalName(signal_number), " before every rank arrived"),
                      signal_number);
}

// " (the cluster from slurm)", or "" when the source is not known.
std::string FromSource(const RendezvousOptions& options) {
  return options.cluster_source.empty() ? "" : " (the cluster from " + options.cluster_source + ")";
}

// Logs, every progress_interval, which ranks the round still waits for.
class ProgressReport {
 public:
  explicit ProgressReport(const RendezvousOptions& options)
      : options_(options), start_(std::chrono::steady_clock::now()), next_(start_ + options.progress_interval) {}

  bool due() const { return std::chrono::steady_clock::now() >= next_; }
  // Logs the ranks still missing, and schedules the next report.
  void Report(Store& store, const std::vector<int>& missing) {
    const auto now = std::chrono::steady_clock::now();
    next_ = now + options_.progress_interval;
    Log().info("Rendezvous of job '{}' (rank {} of {}, {}): waiting for {}{}; {} of {} passed", options_.job_id,
               options_.rank, options_.world_size, store.describe(), DescribeRanks(missing), FromSource(options_),
               DescribeDuration(std::chrono::duration_cast<std::chrono::milliseconds>(now - start_)),
               DescribeDuration(options_.timeout));
  }

 private:
  const RendezvousOptions& options_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point next_;
};

// Records the job id in a store that has none, or checks it against the one recorded.
void ClaimStoreForJob(Store& store, const RendezvousOptions& options, std::chrono::steady_clock::time_point deadline) {
  if (store.add(kJobClaimsKey, 1) == 1) {
    store.set(kJobIdKey, options.job_id);
    return;
  }
  std::string owner;
  try {
    owner = store.get(kJobIdKey, Remaining(deadline));
  } catch (const TimeoutError&) {
    EST_THROW(TimeoutError, "rendezvous of job '", options.job_id, "': ", store.describe(),
              " was claimed by a job that did not record its id within ", DescribeDuration(options.timeout));
  }
  EST_CHECK(owner == options.job_id, ConfigError, "rendezvous of job '", options.job_id, "' (rank ", options.rank,
            "): ", store.describe(), " belongs to job '", owner,
            "'; two jobs cannot share a chief's store: give each job its own chief address or port");
}

// The keys of one round of the job's rendezvous.
class Round {
 public:
  Round(const std::string& job_id, int64_t generation, int world_size)
      : generation_(generation), generation_key_(job_id + "/rendezvous/generation") {
    const std::string base = job_id + "/rendezvous/" + std::to_string(generation) + "/";
    closed_key_ = base + "closed";
    abandoned_key_ = base + "abandoned";
    rank_prefix_ = base + "rank/";
    for (int rank = 0; rank < world_size; ++rank) rank_keys_.push_back(rank_prefix_ + std::to_string(rank));
  }

  int64_t generation() const { return generation_; }
  // Counts one arrival of `rank`; false when a process of this rank had already arrived.
  bool Join(Store& store, int rank) const { return store.add(rank_keys_[rank], 1) == 1; }
  bool Complete(Store& store) const { return store.check(rank_keys_); }
  // Waits up to `slice` for every rank, woken by the store as the last one arrives.
  bool WaitComplete(Store& store, std::chrono::milliseconds slice) const {
    try {
      store.wait(rank_keys_, slice);
      return true;
    } catch (const TimeoutError&) {
      return false;
    }
  }
  bool Closed(Store& store) const { return store.check({closed_key_}); }
  bool Abandoned(Store& store) const { return store.check({abandoned_key_}); }
  // Closes the round; only the first call advances the generation.
  void Close(Store& store) const {
    if (store.add(closed_key_, 1) == 1) store.add(generation_key_, 1);
  }
  // Closes the round for a rank that timed out, failing every rank still waiting in it.
  void Abandon(Store& store) const {
    store.set(abandoned_key_, "");
    Close(store);
  }
  // The ranks not among the keys listed under the round's "rank/".
  std::vector<int> MissingRanks(Store& store) const {
    const std::vector<std::string> joined = store.list(rank_prefix_);
    std::vector<int> missing;
    for (int rank = 0; rank < static_cast<int>(rank_keys_.size()); ++rank)
      if (std::find(joined.begin(), joined.end(), rank_keys_[rank]) == joined.end()) missing.push_back(rank);
    return missing;
  }

 private:
  int64_t generation_;
  std::string generation_key_;
  std::string closed_key_;
  std::string abandoned_key_;
  std::string rank_prefix_;
  std::vector<std::string> rank_keys_;
};

}  // namespace

std::shared_ptr<Store> Rendezvous(std::shared_ptr<Store> store, const RendezvousOptions& options) {
  EST_CHECK(store != nullptr, ConfigError, "rendezvous of job '", options.job_id, "': the store is null");
  EST_CHECK(!options.job_id.empty(), ConfigError, "rendezvous: the job id is empty");
  EST_CHECK(options.world_size > 0, ConfigError, "rendezvous of job '", options.job_id,
            "': world_size must be positive, got ", options.world_size);
  EST_CHECK(options.rank >= 0 && options.rank < options.world_size, ConfigError, "rendezvous of job '",
            options.job_id, "': rank must be in [0, ", options.world_size, "), got ", options.rank);
  EST_CHECK(options.timeout.count() > 0, ConfigError, "rendezvous of job '", options.job_id,
            "': the timeout must be positive, got ", options.timeout.count(), " ms");
  EST_CHECK(options.progress_interval.count() > 0, ConfigError, "rendezvous of job '", options.job_id,
            "': the progress interval must be positive, got ", options.progress_interval.count(), " ms");
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  ProgressReport progress(options);
  try {
    ClaimStoreForJob(*store, options, deadline);
  } catch (const CommunicationError& error) {
    // The chief's store never answered: rank 0 is the one missing.
    EST_THROW(CommunicationError, "rendezvous of job '", options.job_id, "' (rank ", options.rank, " of ",
              options.world_size, "): rank 0's store did not answer", FromSource(options), ": ",
              error.what());
  }
  const std::string generation_key = options.job_id + "/rendezvous/generation";
  int64_t generation = store->add(generation_key, 0);
  while (true) {
    const Round round(options.job_id, generation, options.world_size);
    if (round.Join(*store, options.rank)) {
      // Waits in slices, to notice a round closed by a timed-out or restarted rank.
      const bool settled = PollUntil(deadline, [&] {
        StopIfSignalled(options);
        if (round.WaitComplete(*store, std::min(kWaitSlice, Remaining(deadline))) || round.Closed(*store)) return true;
        if (progress.due()) progress.Report(*store, round.MissingRanks(*store));
        return false;
      });
      if (round.Complete(*store)) {
        round.Close(*store);
        return CreatePrefixStore(options.job_id + "/" + std::to_string(generation), store);
      }
      if (!settled || round.Abandoned(*store)) {
        if (!settled) round.Abandon(*store);
        EST_THROW(TimeoutError, "rendezvous of job '", options.job_id, "' (rank ", options.rank, ", round ",
                  generation, ", ", store->describe(), "): ", DescribeRanks(round.MissingRanks(*store)), " of ",
                  options.world_size, " never arrived within ", DescribeDuration(options.timeout),
                  FromSource(options));
      }
    } else {
      round.Close(*store);
    }
    // The round closed without completing: join the next one once it opens.
    const bool opened = PollUntil(deadline, [&] {
      StopIfSignalled(options);
      generation = store->add(generation_key, 0);
      return generation > round.generation();
    });
    EST_CHECK(opened && std::chrono::steady_clock::now() < deadline, TimeoutError, "rendezvous of job '",
              options.job_id, "' (rank ", options.rank, ", ", store->describe(), "): round ", round.generation(),
              " closed before every rank joined, and no later round completed within ",
              DescribeDuration(options.timeout), " (restarted ranks, or two processes claiming one rank?)");
  }
}

}  // namespace est::distribute
