#pragma once
/// AsyncCheckpointWriter: checkpoints written on a background thread while training goes
/// on. The caller's thread only copies the tensors; one writer thread runs
/// CheckpointManager::save (write, fsync, rename, state file, retention).

#include <ATen/core/Tensor.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_manager.h"

namespace est::checkpoint {

/// Saves checkpoints through a CheckpointManager on one background thread, one at a time.
///
/// save() waits for the previous save to finish, copies the tensors to CPU memory (so the
/// caller may update them at once) and returns; the files appear when the writer thread
/// has written them. A save that fails in the background is rethrown, as the original
/// exception (a CheckpointError naming the path), by the next call to save(), wait() or
/// check(), exactly once. Not thread-safe: one thread calls save(), wait() and check().
///
/// The copy's memory is kept and reused by the next save of tensors of the same shapes
/// and dtypes (the writer holds one copy of the model between saves), and the writer
/// thread runs at a lower CPU priority (nice +10) than the training threads.
class AsyncCheckpointWriter {
 public:
  /// Named tensors, in checkpoint order.
  using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

  /// Takes over `manager` and starts the writer thread.
  explicit AsyncCheckpointWriter(CheckpointManager manager);
  /// Waits for the save in progress; logs, never throws, a failure not yet reported.
  ~AsyncCheckpointWriter();
  AsyncCheckpointWriter(const AsyncCheckpointWriter&) = delete;
  AsyncCheckpointWriter& operator=(const AsyncCheckpointWriter&) = delete;

  /// Waits for the previous save (rethrowing its failure), snapshots `tensors` into new
  /// contiguous CPU memory and hands them, with `blobs`, to the writer thread. Returns the
  /// prefix `<dir>/model.ckpt-<step>` the checkpoint will have once written.
  std::string save(int64_t step, const Tensors& tensors, std::map<std::string, std::string> blobs);

  /// Blocks until no save is in progress; rethrows a failure not yet reported.
  void wait();

  /// Rethrows a failure not yet reported, without waiting for the save in progress.
  void check();

  /// True while a save handed over by save() is not yet fully written.
  bool saving() const;

 private:
  struct Job {
    int64_t step;
    Tensors tensors;
    std::map<std::string, std::string> blobs;
  };

  void write_jobs();
  void rethrow_failure(std::unique_lock<std::mutex>& lock);

  CheckpointManager manager_;  // used by the writer thread only, after construction
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Job> job_;  // the save in progress: set by save(), reset once written
  std::vector<at::Tensor> staging_;  // the last snapshot's memory, for the next one
  std::exception_ptr failure_;
  std::atomic<bool> failed_{false};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace est::checkpoint
