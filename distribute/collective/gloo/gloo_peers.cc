#include "distribute/collective/gloo/gloo_peers.h"

#include <gloo/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>

#include <cctype>
#include <thread>
#include <utility>

#include "common/error.h"
#include "distribute/rendezvous/store.h"

// Gloo's TCP pair names its peer in errors by one of two addresses of the peer's end:
// the address the peer published for the pair before connecting (its listening socket,
// in the blob connectFullMesh stores under the peer's rank), or the address of the
// connected socket, which replaces it once the connection is made. Each rank publishes
// the second under "peer_address/<rank>/<peer>"; the first is read from Gloo's own blob
// with Gloo's tcp::Address. Both are learnt at creation, so that the rank behind an
// error's address is known even when the store is gone with the chief.
//
// A rank that fails because a peer that failed before it exited would name that peer.
// So every rank that loses a connection records the lost rank under "lost_rank/<n>" (n
// from the counter "lost_rank/claims") before it reports, and names the first record's.

namespace est::distribute {
namespace {

std::string AddressKey(int rank, int peer) {
  return "peer_address/" + std::to_string(rank) + "/" + std::to_string(peer);
}

// The address `peer` published for its pair with `rank` in connectFullMesh's blob (one
// tcp::Address per other rank, in rank order); "" when the blob has another layout (a Gloo
// that stores it differently), so that only the connected socket's address is known.
std::string PublishedAddress(Store& store, int peer, int rank, int world_size, size_t address_bytes,
                             std::chrono::milliseconds timeout) {
  const std::string blob = store.get(std::to_string(peer), timeout);
  if (blob.size() != static_cast<size_t>(world_size - 1) * address_bytes) return "";
  const size_t index = static_cast<size_t>(rank < peer ? rank : rank - 1);
  const std::vector<char> bytes(blob.begin() + static_cast<std::ptrdiff_t>(index * address_bytes),
                                blob.begin() + static_cast<std::ptrdiff_t>((index + 1) * address_bytes));
  return gloo::transport::tcp::Address(bytes).str();
}

}  // namespace

GlooPeers GlooPeers::Exchange(std::shared_ptr<Store> store, gloo::Context& context, int rank, int world_size,
                              std::chrono::milliseconds timeout) {
  size_t address_bytes = 0;
  for (int peer = 0; peer < world_size; ++peer) {
    if (peer == rank) continue;
    const auto& address = context.getPair(peer)->address();
    address_bytes = address.bytes().size();
    store->set(AddressKey(rank, peer), address.str());
  }
  std::vector<std::vector<std::string>> addresses(static_cast<size_t>(world_size));
  for (int peer = 0; peer < world_size; ++peer) {
    if (peer == rank) continue;
    addresses[static_cast<size_t>(peer)] = {store->get(AddressKey(peer, rank), timeout),
                                            PublishedAddress(*store, peer, rank, world_size, address_bytes, timeout)};
  }
  return GlooPeers(std::move(store), rank, std::move(addresses));
}

std::optional<int> GlooPeers::RankIn(const std::string& message) const {
  for (size_t peer = 0; peer < addresses_.size(); ++peer) {
    for (const std::string& address : addresses_[peer]) {
      if (address.empty()) continue;
      for (size_t at = message.find(address); at != std::string::npos; at = message.find(address, at + 1)) {
        const size_t end = at + address.size();
        // "[127.0.0.1]:4123" must not match inside "[127.0.0.1]:41234".
        if (end == message.size() || std::isdigit(static_cast<unsigned char>(message[end])) == 0) {
          return static_cast<int>(peer);
        }
      }
    }
  }
  return std::nullopt;
}

std::string GlooPeers::ConnectedAddress(int peer) const {
  const std::vector<std::string>& addresses = addresses_.at(static_cast<size_t>(peer));
  return addresses.empty() ? std::string() : addresses.front();
}

std::optional<int> GlooPeers::RecordLoss(int lost) const {
  try {
    const int64_t claim = store_->add("lost_rank/claims", 1);
    store_->set("lost_rank/" + std::to_string(claim), std::to_string(lost));
    return std::stoi(store_->get("lost_rank/1", std::chrono::seconds(1)));
  } catch (const Error&) {
    return std::nullopt;  // the store went with the chief
  }
}

void GlooPeers::PublishWhere(const std::string& where) const { store_->set("where/" + std::to_string(rank_), where); }

std::optional<GlooPeers::TimeoutReport> GlooPeers::ReportTimeout(uint64_t operation, std::chrono::milliseconds patience,
                                                                  const std::string& record) const {
  const auto key = [operation](int rank) {
    return "timed_out/" + std::to_string(operation) + "/" + std::to_string(rank);
  };
  // A value already set: waits no longer than needed for one read.
  constexpr std::chrono::milliseconds kRead(1000);
  try {
    store_->set(key(rank_), record);
    const auto end = std::chrono::steady_clock::now() + patience;
    TimeoutReport report;
    while (true) {
      report = TimeoutReport();
      for (int peer = 0; peer < static_cast<int>(addresses_.size()); ++peer) {
        if (peer == rank_) continue;
        (store_->check({key(peer)}) ? report.waiting : report.silent).push_back(peer);
      }
      if (report.silent.empty() || std::chrono::steady_clock::now() >= end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    report.records.resize(addresses_.size());
    report.where.resize(addresses_.size());
    report.records[static_cast<size_t>(rank_)] = record;
    for (int peer : report.waiting) report.records[static_cast<size_t>(peer)] = store_->get(key(peer), kRead);
    for (int peer : report.silent) {
      const std::string where = "where/" + std::to_string(peer);
      if (store_->check({where})) report.where[static_cast<size_t>(peer)] = store_->get(where, kRead);
    }
    return report;
  } catch (const Error&) {
    return std::nullopt;  // the store went with the chief
  }
}

std::string GlooPeers::Describe(const std::vector<int>& peers) const {
  std::string text = peers.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < peers.size(); ++i) {
    const std::string& address = addresses_[static_cast<size_t>(peers[i])].front();
    text += (i ? ", " : "") + std::to_string(peers[i]) + (address.empty() ? "" : " (" + address + ")");
  }
  return text;
}

}  // namespace est::distribute
