#pragma once
/// Workers as threads of one test process: MultiWorkerMirroredStrategy over an in-memory
/// rendezvous and a real Gloo collective.

#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "distribute/collective/gloo/gloo_collective.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/store.h"

namespace est::testing {

/// Runs `worker(rank, strategy)` on `world` threads, each with a MultiWorkerMirroredStrategy
/// over one Gloo collective (through shared memory unless `shared_memory` is false) with
/// gradient buckets `buckets`, and a second one for model_fn's collectives; `timeout` limits
/// every collective call.
template <typename Worker>
void RunMultiWorkerThreads(int world, Worker worker, est::distribute::GradientReducerOptions buckets = {},
                           bool shared_memory = true, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  auto store = est::distribute::CreateInMemoryStore();
  std::vector<std::future<void>> workers;
  for (int rank = 0; rank < world; ++rank) {
    workers.push_back(std::async(std::launch::async, [&, rank] {
      est::distribute::RendezvousOptions options;
      options.job_id = "multi_worker_training_test";
      options.rank = rank;
      options.world_size = world;
      options.timeout = std::chrono::seconds(30);
      est::distribute::GlooOptions gloo;
      gloo.timeout = timeout;
      gloo.shared_memory = shared_memory;
      const std::shared_ptr<est::distribute::Store> job = est::distribute::Rendezvous(store, options);
      std::shared_ptr<est::distribute::Collective> collective =
          est::distribute::CreateGlooCollective(job, rank, world, gloo);
      gloo.shared_memory = false;
      std::shared_ptr<est::distribute::Collective> model_collective =
          est::distribute::CreateGlooCollective(est::distribute::CreatePrefixStore("model_fn", job), rank, world, gloo);
      worker(rank, est::distribute::MultiWorkerMirroredStrategy::CreateWithCollective(
                       collective, {"cpu"}, est::distribute::BufferSync::kBroadcast, buckets, model_collective));
    }));
  }
  for (auto& w : workers) w.get();
}

}  // namespace est::testing
