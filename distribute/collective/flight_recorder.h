#pragma once
/// FlightRecorder: the last collective calls of one rank (what, how large, when, and how each
/// ended), and the diagnosis of a collective that did not complete from every rank's record:
/// which rank never entered the call or is stuck in it, its last completed call, its host and
/// pid, what the others were doing, and a desync (ranks in different calls under one number).
/// The live recorders of a process can be dumped into the log on demand (LogFlightRecorders),
/// and each logs itself when it ends.

#include <c10/core/ScalarType.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace at {
class TensorBase;
}  // namespace at

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
  /// The collective whose calls these are ("gloo", "gloo+shm", "nccl").
  std::string collective;
  int rank = 0;
  int world_size = 0;
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
/// enters and leaves calls while another thread may take a record (a dump on demand). Every
/// recorder is among the process's live recorders (LiveFlightRecords) until it ends, and logs
/// itself then: with its last 16 calls, as a warning, when a call failed or never left; else
/// in one line.
class FlightRecorder {
 public:
  /// Keeps the last `capacity` calls (at least 1) of the collective named `collective`.
  explicit FlightRecorder(std::string collective, size_t capacity = 64);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  /// Names the rank whose calls these are, the world's size, and where the rank runs (its
  /// address; empty: the machine's name). Until then: rank 0 of 1 on the machine's name.
  void Identify(int rank, int world_size, std::string host);

  /// Records that this rank enters its next call; returns the call's sequence number.
  uint64_t Enter(std::string kind, int64_t bytes, std::string dtype);
  /// Records that call `sequence` completed, or failed.
  void Leave(uint64_t sequence, bool completed);

  /// The calls kept, oldest first.
  std::vector<CollectiveCall> Calls() const;
  /// This rank's record: its calls, with who it is (Identify) and this process's pid.
  RankFlightRecord Record() const;

 private:
  mutable std::mutex mutex_;
  const std::string collective_;
  const size_t capacity_;
  int rank_ = 0;        // guarded by mutex_, like what follows
  int world_size_ = 1;
  std::string host_;
  uint64_t entered_ = 0;  // calls entered so far
  std::deque<CollectiveCall> calls_;
};

/// One call in a recorder, as a scope: entered when made, and failed when it ends unless
/// completed() was called first (an exception left it).
class RecordedCall {
 public:
  RecordedCall(FlightRecorder& recorder, std::string kind, int64_t bytes, std::string dtype);
  /// A call on `tensor`: its bytes, and its element type as RecordedDtype names it.
  RecordedCall(FlightRecorder& recorder, std::string kind, const at::TensorBase& tensor);
  ~RecordedCall();
  RecordedCall(const RecordedCall&) = delete;
  RecordedCall& operator=(const RecordedCall&) = delete;

  /// The call's number, the same on every rank.
  uint64_t sequence() const { return sequence_; }
  /// Records that the call completed.
  void completed();
  /// Records that the call failed (before the caller takes a record that should say so).
  void failed();

 private:
  FlightRecorder& recorder_;
  uint64_t sequence_;
  bool left_ = false;
};

/// The name a record gives a tensor of `type`: "float32", "float64", "float16", "bfloat16",
/// "int32", "int64", else LibTorch's name.
std::string RecordedDtype(c10::ScalarType type);

/// The records of this process's live recorders, oldest recorder first.
std::vector<RankFlightRecord> LiveFlightRecords();

/// A record for people: "flight recorder of gloo rank 1 of 2 (host h, pid p): 58 calls; inside
/// allreduce #58 (4.0 MB float32) for 5.1 s; ..." then its last `last_calls` calls, one a line,
/// with how long each took. `now_us` dates the durations.
std::string DescribeFlightRecord(const RankFlightRecord& record, int64_t now_us, size_t last_calls);

/// Logs every live recorder of this process with its last 16 calls, as a warning that starts
/// with `reason` ("received SIGUSR1"); logs that there is none when there is none.
void LogFlightRecorders(const std::string& reason);

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
