#pragma once
/// SharedMemoryAllreduce: the all-reduce (and broadcast) of ranks that share a host, through
/// one shared memory segment instead of TCP loopback (as NCCL's and MPI's shared-memory
/// transports do).

#include <ATen/core/Tensor.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace est::distribute {

class Store;

/// Sums tensors over the ranks of one host. A tensor goes in chunks: each rank copies the
/// chunk into its slot of the segment; after a barrier each rank sums its 1/n part of the
/// chunk over every slot; after a second barrier each copies the whole sum back. Chunks
/// alternate between two sets of slots, so one chunk's writes never race the previous
/// chunk's reads. A rank waiting at a barrier spins briefly, then sleeps on a futex.
///
/// A wait fails with TimeoutError after `timeout`, naming the ranks that did not arrive,
/// and with CommunicationError within 50 ms when a peer process has exited, at once when a
/// peer has closed its collective or a rank cut another off. After an error every later call fails: the object (like
/// the collective that owns it) is broken.
class SharedMemoryAllreduce {
 public:
  /// Connects the ranks through `store` (fresh keys: one collective's rendezvous round).
  /// Rank 0 creates the segment and removes its name once every rank has mapped it, so
  /// nothing is left in /dev/shm even after a crash. Returns null on every rank (they
  /// agree through the store) when the ranks are not all in this host's namespaces or a
  /// rank cannot map the segment; the caller then stays on TCP.
  static std::unique_ptr<SharedMemoryAllreduce> Connect(Store& store, int rank, int world_size,
                                                        std::chrono::milliseconds timeout);
  ~SharedMemoryAllreduce();
  SharedMemoryAllreduce(const SharedMemoryAllreduce&) = delete;
  SharedMemoryAllreduce& operator=(const SharedMemoryAllreduce&) = delete;

  /// Whether allreduce() takes `tensor`: a contiguous CPU tensor of float32, float64, int32 or int64.
  static bool Supports(const at::Tensor& tensor);
  /// Replaces `tensor` by its elementwise sum over the ranks. Every rank passes a tensor
  /// of the same dtype and size (CommunicationError otherwise).
  void allreduce(at::Tensor& tensor);
  /// Replaces `tensor` by rank `root`'s: a contiguous CPU tensor of any dtype, the same dtype
  /// and size on every rank (CommunicationError otherwise). The root copies each chunk into
  /// its slot once; the others copy it out.
  void broadcast(at::Tensor& tensor, int root);
  /// The rank whose process exited, or that a rank cut off (cut_off), where that is what made
  /// an operation fail (any rank's).
  std::optional<int> lost_rank() const;
  /// Fails every rank's waiting call, now or later, naming `rank` lost: the caller learned
  /// that it is (it stopped beating) while its process lives on. Thread-safe.
  void cut_off(int rank);
  /// A function, independent of this object's life, that returns the ranks whose processes
  /// have exited (a zombie counts) by the time it is called, ascending.
  std::function<std::vector<int>()> exited_ranks_watch() const;

 private:
  struct Header;
  SharedMemoryAllreduce(int rank, int world_size, std::chrono::milliseconds timeout, void* base, size_t bytes,
                        size_t chunk_bytes, std::vector<pid_t> pids);

  void barrier();
  void check_usable(const char* operation);
  void check_chunks(int64_t count, const char* unit, at::ScalarType type);
  bool peer_gone() const;
  void record_failure(uint32_t failure);
  [[noreturn]] void fail_waiting(bool timed_out, int exited_rank);
  std::byte* slot(int set, int rank) const;

  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  void* base_;
  size_t bytes_;
  size_t chunk_bytes_;
  std::vector<pid_t> pids_;
  Header* header_;
  uint64_t barriers_ = 0;  ///< barriers this rank has entered
  uint64_t chunks_ = 0;    ///< chunks this rank has reduced (picks the slot set)
  bool broken_ = false;
  const char* operation_ = "allreduce";  ///< the operation under way, for error messages
};

}  // namespace est::distribute
