#pragma once
/// TensorBoard event files: SummaryWriter appends scalars and session logs that
/// TensorBoard (and TensorFlow's summary_iterator) read, like tf.compat.v1.summary.FileWriter.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace est::tfrecord {
class RecordFileWriter;
}  // namespace est::tfrecord

namespace est {

/// A session state change recorded in an event file (TensorFlow's SessionLog.SessionStatus).
enum class SessionStatus {
  kStart = 1,       ///< A training session started or restarted at the given step.
  kStop = 2,        ///< The session ended.
  kCheckpoint = 3,  ///< A checkpoint was saved at the given step.
};

/// Appends TensorBoard events to `<logdir>/events.out.tfevents.<unix secs>.<hostname>`
/// (creating logdir; a name already taken gets a `.1`, `.2`, ... suffix). The first record is
/// Event{wall_time, file_version: "brain.Event:2"}. Every add_* call hands its record to the
/// operating system at once, so TensorBoard sees it while training runs and a crash loses
/// nothing already added. Tags and checkpoint paths are stored as valid UTF-8 (proto3
/// strings, which readers reject otherwise): a byte outside a well-formed UTF-8 sequence
/// becomes U+FFFD. Thread-safe.
class SummaryWriter {
 public:
  /// Creates logdir and a new event file in it; throws IoError naming the path on failure.
  explicit SummaryWriter(const std::string& logdir);
  /// Flushes and closes the file.
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  /// Writes Event{wall_time = now, step, summary{value{tag, simple_value}}} (value as float32,
  /// as TensorFlow stores scalars).
  void add_scalar(const std::string& tag, double value, int64_t step);
  /// Writes one Event holding every value at `step`; nothing when `values` is empty.
  void add_scalars(const std::map<std::string, double>& values, int64_t step);
  /// Writes Event{wall_time = now, step, session_log{status, checkpoint_path}}.
  void add_session_log(SessionStatus status, int64_t step, const std::string& checkpoint_path = "");
  /// Makes every record written so far durable (fsync). Records already reach the
  /// operating system, and so readers, at each add_* call.
  void flush();

  /// The event file's path.
  const std::string& path() const;
  /// The directory the writer was created for.
  const std::string& logdir() const { return logdir_; }

 private:
  void append_record(const std::string& event_bytes);

  std::string logdir_;
  std::unique_ptr<tfrecord::RecordFileWriter> file_;
  std::mutex mutex_;
};

/// The one SummaryWriter of `logdir` in this process, created on first use and shared by
/// every caller (like TensorFlow's FileWriterCache); spellings of the same directory
/// ("dir", "dir/", "./dir") share one writer. Writers live until the process exits; one
/// whose event file was removed (its directory deleted and made again) is replaced by a new
/// one. Thread-safe.
std::shared_ptr<SummaryWriter> SummaryWriterFor(const std::string& logdir);

}  // namespace est
