#pragma once
/// Gloo collectives for the ranks of a world run as threads of the test process.

#include <chrono>
#include <memory>
#include <vector>

#include "distribute/collective/gloo/gloo_collective.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"

namespace est::testing {

/// A Gloo collective for each rank of `world`, connected through an in-memory store;
/// all-reduce through shared memory unless `shared_memory` is false (then over TCP).
inline std::vector<std::shared_ptr<distribute::Collective>> ConnectGlooRanks(int world, bool shared_memory = true) {
  auto store = distribute::CreateInMemoryStore();
  return RunRanks<std::shared_ptr<distribute::Collective>>(world, [&](int rank) {
    distribute::GlooOptions gloo;
    gloo.timeout = std::chrono::seconds(20);
    gloo.shared_memory = shared_memory;
    return std::shared_ptr<distribute::Collective>(distribute::CreateGlooCollective(store, rank, world, gloo));
  });
}

}  // namespace est::testing
