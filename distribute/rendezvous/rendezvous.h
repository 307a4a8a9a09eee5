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
  /// While ranks are missing, a log line names them this often.
  std::chrono::milliseconds progress_interval = std::chrono::seconds(30);
  /// What described the cluster ("slurm", "mpi", "TF_CONFIG", "torchrun"), named in the log
  /// lines and errors of a wait, so that a missing rank leads to the launcher that lost it;
  /// empty when not known.
  std::string cluster_source;
};

/// Announces `options.rank` in `store` and waits for all ranks of the job. Returns a view
/// of `store` private to this job and this round ("<job_id>/<round>/"): calling Rendezvous
/// again on the same store (a restarted job, a new collective) starts a new round whose keys
/// no earlier round has set. The first job to rendezvous in a store owns it. Throws
/// ConfigError when the store belongs to a job with another id (naming both and the store),
/// and TimeoutError listing the ranks that never arrived (and the cluster's source); when one
/// rank times out, every rank waiting in its round fails too. While ranks are missing, a log
/// line names them every `progress_interval`. Ranks may arrive in any order; thread-safe.
std::shared_ptr<Store> Rendezvous(std::shared_ptr<Store> store, const RendezvousOptions& options);

}  // namespace est::distribute
