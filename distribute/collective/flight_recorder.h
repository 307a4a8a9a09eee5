#pragma once
/// FlightRecorder: the last collective calls of one rank (what, how large, when, and how each
/// ended), and the diagnosis of a collective that did not complete from every rank's record:
/// which rank never entered the call or is stuck in it, its last completed call, its host and
/// pid, what the others were doing, and a desync (ranks in different calls under one number).

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace est::distribute {

/// One collective call as a rank's flight recorder keeps it.
struct CollectiveCall {
  /// How the call stands.
  enum class State { kEntered, kCompleted, kFailed };
  /// 1 for the collective's first call; a call has the same number on every rank, since every
  /// rank makes the same calls in the same order.
  uint64_t sequence = 0;
  /// "allreduce", "broadcast", "allgather", "barrier".
  std::string kind;
  /// The bytes of the call's tensor on this rank.
  int64_t bytes = 0;
  /// The tensor's element type ("float32"); empty for a barrier.
  std::string dtype;
  /// When the rank entered the call, and left it (0 while inside): microseconds since the Unix epoch.
  int64_t entered_us = 0;
  int64_t left_us = 0;
  State state = State::kEntered;

  /// "allreduce #58 (4.0 MB float32)".
  std::string label() const;
};

/// What one rank's flight recorder holds, with where the rank runs: what ranks exchange when a
/// call does not complete.
struct RankFlightRecord {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  /// When the record was taken, microseconds since the Unix epoch.
  int64_t taken_us = 0;
  /// The rank's last calls, oldest first.
  std::vector<CollectiveCall> calls;

  /// The record as one line of JSON, for the job's store.
  std::string Serialize() const;
  /// Reads a record that Serialize wrote; nothing for anything else (a record from another
  /// version, a truncated value).
  static std::optional<RankFlightRecord> Parse(const std::string& text);
};

/// The last `capacity` collective calls of this rank. Thread-safe: the collective's caller
/// enters and leaves calls while another thread may take a record (a dump on demand).
class FlightRecorder {
 public:
  /// Keeps the last `capacity` calls (at least 1).
  explicit FlightRecorder(size_t capacity = 64);

  /// Records that this rank enters its next call; returns the call's sequence number.
  uint64_t Enter(std::string kind, int64_t bytes, std::string dtype);
  /// Records that call `sequence` completed, or failed.
  void Leave(uint64_t sequence, bool completed);

  /// The calls kept, oldest first.
  std::vector<CollectiveCall> Calls() const;
  /// This rank's record: its calls, with `rank`, `host` and this process's pid.
  RankFlightRecord Record(int rank, const std::string& host) const;

 private:
  mutable std::mutex mutex_;
  size_t capacity_;
  uint64_t entered_ = 0;  // calls entered so far
  std::deque<CollectiveCall> calls_;
};

/// Why call `sequence` (one that timed out or failed) did not complete, from the records the
/// ranks sent (by rank; nothing for a rank that sent none: it is stopped, gone or cut off) and
/// what each published `earlier`, if anything (where it runs, and perhaps its calls then).
/// Names, in this order: a desync (ranks whose call `sequence` is of another kind, size or
/// type), each rank that sent no record (with where it runs, and its last completed call from
/// its earlier calls, else the last call every rank that answered completed with it, since
/// every rank takes part in every call), each rank that
/// never entered the call (with the call it is inside, its last completed call, host and pid),
/// and each rank stuck inside the call while others completed it; then the ranks that waited
/// in it. `now_us` dates the durations.
std::string DiagnoseCollective(uint64_t sequence, const std::vector<std::optional<RankFlightRecord>>& records,
                               const std::vector<std::optional<RankFlightRecord>>& earlier, int64_t now_us);

/// Microseconds since the Unix epoch, now.
int64_t UnixMicros();

}  // namespace est::distribute
