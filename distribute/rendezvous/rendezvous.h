#pragma once
/// Rendezvous: every rank of a job announces itself in the chief's store and waits for the
/// others; the result is the store view and the membership a collective is built on.

#include <chrono>
#include <memory>
#include <string>

namespace est::distribute {

class Store;

/// What a rank brings to the rendezvous.
struct RendezvousOptions {
  /// Identifies the job: ranks of another job on the same chief address are refused.
  std::string job_id = "default";
  /// This rank and the number of ranks.
  int rank = 0;
  int world_size = 1;
  /// How long to wait for every rank to arrive.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// Announces `options.rank` in `store` and waits for all ranks of the job. Returns a view
/// of `store` private to this job and this round ("<job_id>/<round>/"): calling Rendezvous
/// again on the same store (a restarted job, a new collective) starts a new round whose keys
/// no earlier round has set. The first job to rendezvous in a store owns it. Throws
/// ConfigError when the store belongs to a job with another id (naming both and the store),
/// and TimeoutError listing the ranks that never arrived; when one rank times out, every rank
/// waiting in its round fails too. A refused rank records its refusal in the store (outside
/// the owner's keys) and the owner's rank 0 logs a warning for it while it waits. Ranks may
/// arrive in any order; thread-safe.
std::shared_ptr<Store> Rendezvous(std::shared_ptr<Store> store, const RendezvousOptions& options);

/// Logs a warning, once each, for the ranks of other jobs that `store` (owned by job
/// `job_id`) refused since the last call: "rendezvous of job 'alpha' at TCP store
/// 127.0.0.1:29500: refused job 'beta' (rank 0 of 2), which presented another job id".
/// For the owner's chief, after its rendezvous.
void WarnOfRefusedJobs(Store& store, const std::string& job_id);

}  // namespace est::distribute
