#include "estimator/summary/summary_writer.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "common/error.h"
#include "common/file_util.h"
#include "common/tfrecord_file.h"
#include "common/utf8.h"
#include "estimator/summary/event.pb.h"
#include "estimator/summary/event_file_name.h"

namespace est {
namespace {

constexpr char kFileVersion[] = "brain.Event:2";

double WallTimeNow() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

std::string Hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

/// Creates a new event file in `logdir`, its name suffixed `.1`, `.2`, ... when taken.
std::unique_ptr<tfrecord::RecordFileWriter> CreateEventFile(const std::string& logdir) {
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  const std::string base =
      (std::filesystem::path(logdir) / EventFileName(seconds.count(), Hostname())).string();
  for (int attempt = 0;; ++attempt) {
    auto file = tfrecord::RecordFileWriter::CreateNew(attempt == 0 ? base : base + "." + std::to_string(attempt));
    if (file) return file;
  }
}

tfevents::Event NewEvent(int64_t step) {
  tfevents::Event event;
  event.set_wall_time(WallTimeNow());
  event.set_step(step);
  return event;
}

}  // namespace

SummaryWriter::SummaryWriter(const std::string& logdir) : logdir_(logdir) {
  CreateDirectories(logdir_);
  file_ = CreateEventFile(logdir_);
  tfevents::Event event = NewEvent(0);
  event.set_file_version(kFileVersion);
  append_record(event.SerializeAsString());
}

SummaryWriter::~SummaryWriter() = default;

const std::string& SummaryWriter::path() const { return file_->path(); }

void SummaryWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  add_scalars({{tag, value}}, step);
}

void SummaryWriter::add_scalars(const std::map<std::string, double>& values, int64_t step) {
  if (values.empty()) return;
  tfevents::Event event = NewEvent(step);
  for (const auto& [tag, value] : values) {
    tfevents::Summary::Value* summary_value = event.mutable_summary()->add_value();
    summary_value->set_tag(ToValidUtf8(tag));
    summary_value->set_simple_value(static_cast<float>(value));
  }
  append_record(event.SerializeAsString());
}

void SummaryWriter::add_session_log(SessionStatus status, int64_t step, const std::string& checkpoint_path) {
  tfevents::Event event = NewEvent(step);
  tfevents::SessionLog* log = event.mutable_session_log();
  log->set_status(static_cast<tfevents::SessionLog::SessionStatus>(status));
  log->set_checkpoint_path(ToValidUtf8(checkpoint_path));
  append_record(event.SerializeAsString());
}

void SummaryWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  file_->sync();
}

// Each record goes to the operating system in one write() as it is added, with no user-space
// buffer: summaries come every few hundred steps, so one system call each costs nothing
// measurable, readers (TensorBoard, an evaluator) see every record as soon as it is added,
// and a process that dies loses nothing it added.
void SummaryWriter::append_record(const std::string& event_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  file_->append(event_bytes);
}

std::shared_ptr<SummaryWriter> SummaryWriterFor(const std::string& logdir) {
  struct Cache {
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<SummaryWriter>> writers;
  };
  // Never destroyed: writers stay usable by code that runs during static destruction, and
  // nothing is lost because every record already reached the operating system.
  static Cache* const cache = new Cache;

  CreateDirectories(logdir);
  std::error_code error;
  const std::string key = std::filesystem::canonical(logdir, error).string();
  if (error) EST_THROW(IoError, "cannot resolve log directory '", logdir, "': ", error.message());

  std::lock_guard<std::mutex> lock(cache->mutex);
  std::shared_ptr<SummaryWriter>& writer = cache->writers[key];
  // A log directory removed and made again (a fresh run in the same process) gets a new
  // event file: the cached writer's records would go to a file nobody can open.
  if (!writer || !std::filesystem::exists(writer->path(), error)) writer = std::make_shared<SummaryWriter>(logdir);
  return writer;
}

}  // namespace est
