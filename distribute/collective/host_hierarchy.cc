#include "distribute/collective/host_hierarchy.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "distribute/collective/host_identity.h"
#include "distribute/collective/host_staging.h"
#include "distribute/collective/shared_memory_allreduce.h"
#include "distribute/collective/shared_memory_collective.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {
namespace {

// All-reduce within each host, across the hosts' leaders, and back within each host.
class HierarchicalCollective final : public Collective {
 public:
  /// `neighbours`: the ranks of this host, `local`'s ranks in order; `host_of`: each rank's
  /// host; `leader_of_host`: the rank that leads each host, `leaders`' ranks in order.
  HierarchicalCollective(std::unique_ptr<Collective> flat, std::unique_ptr<SharedMemoryAllreduce> local,
                         std::unique_ptr<Collective> leaders, std::vector<int> neighbours, std::vector<int> host_of,
                         std::vector<int> leader_of_host)
      : flat_(std::move(flat)),
        local_(std::move(local)),
        leaders_(std::move(leaders)),
        neighbours_(std::move(neighbours)),
        host_of_(std::move(host_of)),
        leader_of_host_(std::move(leader_of_host)) {}

  int rank() const override { return flat_->rank(); }
  int world_size() const override { return flat_->world_size(); }
  std::string name() const override { return flat_->name() + "+hierarchy"; }

  void allreduce(at::Tensor& tensor, ReduceOp op) override {
    const at::ScalarType wire = tensor.scalar_type();
    detail::AllreduceStaged(tensor, detail::ReductionType(wire, name()), op, world_size(), [&](at::Tensor& buffer) {
      if (local_) local_->allreduce(buffer);  // the host's sum, on every rank of the host
      if (leaders_) {
        if (buffer.scalar_type() == wire) {
          leaders_->allreduce(buffer, ReduceOp::kSum);
        } else {  // 16-bit floats: half the bytes between hosts
          at::Tensor narrow = buffer.to(wire);
          leaders_->allreduce(narrow, ReduceOp::kSum);
          buffer.copy_(narrow);
        }
      }
      if (local_) local_->broadcast(buffer, 0);  // the leader's total to its host
    });
  }
  void broadcast(at::Tensor& tensor, int root) override { flat_->broadcast(tensor, root); }
  at::Tensor allgather(const at::Tensor& tensor) override { return flat_->allgather(tensor); }
  void barrier() override { flat_->barrier(); }
  // The losses that each part saw, as ranks of this collective: a host lost by the leaders'
  // all-reduce is named by its leader.
  std::vector<int> lost_ranks() const override {
    std::vector<int> lost = flat_->lost_ranks();
    if (leaders_)
      for (int host : leaders_->lost_ranks()) lost.push_back(leader_of_host_.at(static_cast<size_t>(host)));
    if (local_)
      if (const std::optional<int> gone = local_->lost_rank())
        lost.push_back(neighbours_.at(static_cast<size_t>(*gone)));
    std::sort(lost.begin(), lost.end());
    lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
    return lost;
  }
  // A rank of another host is reached through that host's leader: cutting it off cuts the
  // leader's connection (its host's others are stuck behind it, or gone with it).
  void cut_off(const std::vector<int>& ranks) override {
    flat_->cut_off(ranks);  // checks the ranks
    std::vector<int> hosts;
    for (int rank : ranks) {
      if (rank == this->rank()) continue;
      const auto neighbour = std::find(neighbours_.begin(), neighbours_.end(), rank);
      if (neighbour != neighbours_.end()) {
        if (local_) local_->cut_off(static_cast<int>(neighbour - neighbours_.begin()));
        continue;
      }
      const int host = host_of_.at(static_cast<size_t>(rank));
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    }
    if (leaders_ && !hosts.empty()) leaders_->cut_off(hosts);
  }
  std::function<std::vector<int>()> lost_ranks_watch() const override {
    if (!local_) return nullptr;
    return [exited = local_->exited_ranks_watch(), neighbours = neighbours_] {
      std::vector<int> lost;
      for (int local_rank : exited()) lost.push_back(neighbours.at(static_cast<size_t>(local_rank)));
      return lost;
    };
  }

 private:
  std::unique_ptr<Collective> flat_;
  std::unique_ptr<SharedMemoryAllreduce> local_;  ///< null where this rank is alone on its host
  std::unique_ptr<Collective> leaders_;           ///< on a host's leader only
  std::vector<int> neighbours_;                   ///< this host's ranks, local_'s ranks in order
  std::vector<int> host_of_;                      ///< each rank's host
  std::vector<int> leader_of_host_;               ///< each host's first rank, leaders_' ranks in order
};

// Every rank's host, numbered in the order of the hosts' first ranks.
std::vector<int> HostOfEachRank(Store& store, int rank, int world_size, std::chrono::milliseconds timeout) {
  store.set("hosts/identity/" + std::to_string(rank), detail::HostIdentity());
  std::vector<std::string> identities;
  std::vector<int> hosts;
  for (int q = 0; q < world_size; ++q) {
    const std::string identity = store.get("hosts/identity/" + std::to_string(q), timeout);
    const auto known = std::find(identities.begin(), identities.end(), identity);
    hosts.push_back(static_cast<int>(known - identities.begin()));
    if (known == identities.end()) identities.push_back(identity);
  }
  return hosts;
}

}  // namespace

std::unique_ptr<Collective> WithHostHierarchy(std::unique_ptr<Collective> flat, std::shared_ptr<Store> store,
                                              std::chrono::milliseconds timeout,
                                              const ConnectCollective& connect_leaders) {
  const int rank = flat->rank();
  const int world_size = flat->world_size();
  if (world_size == 1) return flat;
  const std::vector<int> host_of = HostOfEachRank(*store, rank, world_size, timeout);
  const int hosts = *std::max_element(host_of.begin(), host_of.end()) + 1;
  if (hosts == 1) return WithHostSharedMemory(std::move(flat), *store, timeout);
  if (hosts == world_size) return flat;  // one rank per host: nothing to share

  const int host = host_of[static_cast<size_t>(rank)];
  std::vector<int> neighbours;  // the ranks of this host, this one included
  for (int q = 0; q < world_size; ++q) {
    if (host_of[static_cast<size_t>(q)] == host) neighbours.push_back(q);
  }
  const auto local_rank = static_cast<int>(std::find(neighbours.begin(), neighbours.end(), rank) - neighbours.begin());
  std::unique_ptr<SharedMemoryAllreduce> local;
  if (neighbours.size() > 1) {
    local = SharedMemoryAllreduce::Connect(*CreatePrefixStore("host" + std::to_string(host), store), local_rank,
                                           static_cast<int>(neighbours.size()), timeout);
  }
  // Hierarchical only where every host that has neighbours could map its segment.
  const bool ready = neighbours.size() == 1 || local != nullptr;
  store->set("hosts/ready/" + std::to_string(rank), ready ? "1" : "0");
  bool everyone_ready = true;
  for (int q = 0; q < world_size; ++q)
    everyone_ready = store->get("hosts/ready/" + std::to_string(q), timeout) == "1" && everyone_ready;
  if (!everyone_ready) return flat;
  std::unique_ptr<Collective> leaders;
  if (local_rank == 0) leaders = connect_leaders(CreatePrefixStore("leaders", store), host, hosts);
  if (rank == 0)
    Log().info("{} ranks on {} hosts: all-reduce within each host through shared memory, across hosts among their "
               "first ranks", world_size, hosts);
  std::vector<int> leader_of_host(static_cast<size_t>(hosts), -1);
  for (int q = world_size - 1; q >= 0; --q) leader_of_host[static_cast<size_t>(host_of[static_cast<size_t>(q)])] = q;
  return std::make_unique<HierarchicalCollective>(std::move(flat), std::move(local), std::move(leaders),
                                                  std::move(neighbours), host_of, std::move(leader_of_host));
}

std::unique_ptr<Collective> ConnectWithHostHierarchy(const ConnectCollective& connect, std::shared_ptr<Store> store,
                                                     int rank, int world_size, std::chrono::milliseconds timeout) {
  std::unique_ptr<Collective> flat = connect(store, rank, world_size);
  if (world_size == 1) return flat;
  RendezvousOptions round;
  round.job_id = "hosts";
  round.rank = rank;
  round.world_size = world_size;
  round.timeout = timeout;
  return WithHostHierarchy(std::move(flat), Rendezvous(CreatePrefixStore("hosts", std::move(store)), round), timeout,
                           connect);
}

}  // namespace est::distribute
