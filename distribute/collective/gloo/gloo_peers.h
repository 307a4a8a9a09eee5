#pragma once
/// GlooPeers: which rank is behind the address in a Gloo TCP error, and which rank the
/// first rank to lose a connection saw go, so that every survivor names the same lost rank.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gloo {
class Context;
}

namespace est::distribute {

class Store;

/// The TCP addresses by which Gloo names this rank's peers in its errors
/// ("[10.0.0.2]:41234"), and the job-wide record of the first lost rank.
class GlooPeers {
 public:
  /// Learns the addresses of `context`'s peers (connected over `store` by
  /// connectFullMesh, rank `rank` of `world_size`) through `store`, waiting up to
  /// `timeout` for each peer's. Keeps `store` for RecordLoss().
  static GlooPeers Exchange(std::shared_ptr<Store> store, gloo::Context& context, int rank, int world_size,
                            std::chrono::milliseconds timeout);

  /// The peer whose address `message` quotes, if any.
  std::optional<int> RankIn(const std::string& message) const;
  /// The address of `peer`'s end of its connection to this rank ("" if `peer` is this rank).
  std::string ConnectedAddress(int peer) const;
  /// Records in the store that this rank lost rank `lost`, and returns the rank whose loss
  /// any rank recorded first (waiting up to 1 s for that record); nothing when the store
  /// cannot be reached (it went with the chief).
  std::optional<int> RecordLoss(int lost) const;

  /// Records in the store where this rank runs (`where`: its flight record before any call),
  /// which the others quote when it does not answer a timeout.
  void PublishWhere(const std::string& where) const;

  /// Who else timed out in a collective operation, and what each rank's flight recorder said.
  struct TimeoutReport {
    std::vector<int> waiting;  ///< peers that timed out in the same operation, as this rank did
    std::vector<int> silent;   ///< peers that did not: they never arrived, or are stuck
    /// By rank: the flight record each rank that timed out sent (this rank's included).
    std::vector<std::optional<std::string>> records;
    /// By rank: what each silent peer published with PublishWhere.
    std::vector<std::optional<std::string>> where;
  };
  /// Records in the store that this rank timed out in its operation number `operation`,
  /// with its flight record `record`, and waits up to `patience` for the other ranks'
  /// records of the same operation. Nothing when the store cannot be reached.
  std::optional<TimeoutReport> ReportTimeout(uint64_t operation, std::chrono::milliseconds patience,
                                             const std::string& record) const;
  /// "rank 2 ([10.0.0.7]:41230)", "ranks 1 ([…]:4100), 2 ([…]:4200)": peers with the
  /// addresses of their connections to this rank.
  std::string Describe(const std::vector<int>& peers) const;

 private:
  GlooPeers(std::shared_ptr<Store> store, int rank, std::vector<std::vector<std::string>> addresses)
      : store_(std::move(store)), rank_(rank), addresses_(std::move(addresses)) {}

  std::shared_ptr<Store> store_;
  int rank_;
  std::vector<std::vector<std::string>> addresses_;  ///< by rank: the addresses of that peer's end
};

}  // namespace est::distribute
