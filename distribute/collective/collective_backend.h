#pragma once
/// The collective backends of this build, by name ("ring", "nccl"), and the one factory that
/// connects them: what MultiWorkerMirroredStrategy and est-train's --communication choose from.

#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distribute/collective/collective.h"

namespace est::distribute {

class Store;

/// One rank's side of a collective to connect; each backend takes what it needs.
struct CollectiveRequest {
  /// Shared by every rank, with fresh keys (one rendezvous round per collective); may be
  /// null for a world of one.
  std::shared_ptr<Store> store;
  /// This rank and the number of ranks.
  int rank = 0;
  int world_size = 1;
  /// The rank's first local device (NCCL works on it; host-memory backends stage through the CPU).
  c10::Device device = c10::Device(c10::kCPU);
  /// The rank's host in the cluster: the address a network backend binds and tells its peers.
  std::string hostname = "127.0.0.1";
  /// Limit on connecting and on every collective call.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// For backends that go through host memory: all-reduce through shared memory among the
  /// ranks of each host (WithHostHierarchy). False: the backend's own transport only.
  bool shared_memory = true;
};

/// The local devices a backend serves.
enum class BackendDevices {
  kAny,   ///< every device (tensors elsewhere than the CPU are staged through host memory)
  kCuda,  ///< CUDA devices only
};

/// Connects one rank of a backend's collective over its own transport (no shared-memory decorator).
using ConnectBackend = std::unique_ptr<Collective> (*)(const CollectiveRequest& request);

/// What a backend's folder defines (a function named after the backend in namespace
/// est::distribute::collective_backends, returning this).
struct CollectiveConnector {
  /// Whether the backend's tensors go through host memory, where the ranks of one host can
  /// all-reduce through shared memory instead (CreateCollective composes them).
  bool host_memory = false;
  /// Connects one rank.
  ConnectBackend connect = nullptr;
};

/// A collective backend: one line of distribute/collective/CMakeLists.txt (est_collective_backend)
/// and the folder it names.
struct CollectiveBackend {
  /// What MultiWorkerOptions::communication and est-train's --communication call it ("ring").
  std::string name;
  /// What it is, for logs and --help.
  std::string description;
  /// The local devices it serves.
  BackendDevices devices = BackendDevices::kAny;
  /// Why this build lacks it (its folder's switch, a missing toolkit); empty when it has it.
  std::string missing;
  /// How it connects; `connect` is null when `missing` is set.
  CollectiveConnector connector;
};

/// The backends of this build, in the order of registration: communication "auto" takes
/// the first whose devices the local devices are. Those the build lacks are listed too,
/// with `missing` saying why.
const std::vector<CollectiveBackend>& CollectiveBackends();

/// "auto" and the names of CollectiveBackends(), in their order.
std::vector<std::string> CommunicationNames();

/// The backend that `communication` (a backend's name or "auto", any case) means on `devices`,
/// for `who` (a strategy or a flag, named in errors and logs). "auto" takes the first backend
/// in registration order that serves every device and is in this build, and logs a warning
/// for each one it passed over because the build lacks it (ask for the backend by name to
/// silence it). ConfigError for an unknown name (listing the names), a backend this build
/// lacks (saying why), or devices the backend does not serve (naming the first).
const CollectiveBackend& ChooseCollectiveBackend(const std::string& communication,
                                                 const std::vector<c10::Device>& devices, const std::string& who);

/// Connects `request`'s rank of `backend`'s collective. Every rank calls this with the same
/// backend and the same request apart from `rank` (and `hostname`, `device`). For a backend
/// that goes through host memory and a request with `shared_memory`, the all-reduce is
/// WithHostHierarchy's (ConnectWithHostHierarchy). ConfigError when the build lacks the
/// backend; otherwise the backend's own errors (TimeoutError naming the ranks that never
/// arrived, CommunicationError).
std::unique_ptr<Collective> CreateCollective(const CollectiveBackend& backend, const CollectiveRequest& request);

}  // namespace est::distribute
