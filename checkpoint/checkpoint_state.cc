#include "checkpoint/checkpoint_state.h"

#include <google/protobuf/text_format.h>

#include <charconv>
#include <filesystem>
#include <system_error>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_state.pb.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/text_format_errors.h"

namespace est::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string StatePath(const std::string& dir) { return (fs::path(dir) / kStateFileName).string(); }

std::string JoinToDirectory(const std::string& dir, const std::string& path) {
  return fs::path(path).is_absolute() ? path : (fs::path(dir) / path).string();
}

/// The basename of `path` when it lies directly in `dir`, otherwise `path` unchanged.
std::string RelativeToDirectory(const std::string& dir, const std::string& path) {
  if (path.empty()) return path;
  const fs::path absolute = fs::absolute(path).lexically_normal();
  const fs::path directory = (fs::absolute(dir) / "").lexically_normal();
  if ((absolute.parent_path() / "") == directory) return absolute.filename().string();
  return path;
}

}  // namespace

std::optional<CheckpointState> ReadCheckpointState(const std::string& dir) {
  const std::string path = StatePath(dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const IoError& error) {
    EST_THROW(CheckpointError, "checkpoint state file '", path, "' cannot be read: ", error.what());
  }
  proto::CheckpointState message;
  TextFormatErrors errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  EST_CHECK(parser.ParseFromString(text, &message), CheckpointError, "checkpoint state file '",
            path, "' is not a text-format CheckpointState: ", errors.text());
  EST_CHECK(!message.model_checkpoint_path().empty(), CheckpointError, "checkpoint state file '",
            path, "' names no model_checkpoint_path");
  CheckpointState state;
  state.model_checkpoint_path = JoinToDirectory(dir, message.model_checkpoint_path());
  for (const auto& p : message.all_model_checkpoint_paths())
    state.all_model_checkpoint_paths.push_back(JoinToDirectory(dir, p));
  state.all_model_checkpoint_timestamps.assign(message.all_model_checkpoint_timestamps().begin(),
                                               message.all_model_checkpoint_timestamps().end());
  state.last_preserved_timestamp = message.last_preserved_timestamp();
  return state;
}

void WriteCheckpointState(const std::string& dir, const CheckpointState& state) {
  proto::CheckpointState message;
  message.set_model_checkpoint_path(RelativeToDirectory(dir, state.model_checkpoint_path));
  for (const auto& p : state.all_model_checkpoint_paths)
    message.add_all_model_checkpoint_paths(RelativeToDirectory(dir, p));
  for (double t : state.all_model_checkpoint_timestamps)
    message.add_all_model_checkpoint_timestamps(t);
  message.set_last_preserved_timestamp(state.last_preserved_timestamp);
  std::string text;
  EST_ASSERT(google::protobuf::TextFormat::PrintToString(message, &text));
  const std::string path = StatePath(dir);
  try {
    WriteFileAtomic(path, text);
  } catch (const IoError& error) {
    EST_THROW(CheckpointError, "cannot write checkpoint state file '", path, "': ", error.what());
  }
}

std::optional<std::string> LatestCheckpoint(const std::string& dir) {
  auto state = ReadCheckpointState(dir);
  if (!state) return std::nullopt;
  EST_CHECK(CheckpointInDirectory(dir, state->model_checkpoint_path), CheckpointError, "checkpoint state file '",
            StatePath(dir), "' names model_checkpoint_path '", state->model_checkpoint_path,
            "', which is not a checkpoint directly in ", dir,
            " (after resolving '..' and symbolic links); expected a basename such as 'model.ckpt-100'");
  if (!CheckpointExists(state->model_checkpoint_path)) {
    Log().error("Couldn't find checkpoint {} named by {}", state->model_checkpoint_path,
                StatePath(dir));
    return std::nullopt;
  }
  return state->model_checkpoint_path;
}

std::optional<int64_t> StepFromCheckpointPath(const std::string& prefix) {
  const std::string name = fs::path(prefix).filename().string();
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash + 1 == name.size()) return std::nullopt;
  int64_t step = 0;
  const char* first = name.data() + dash + 1;
  const char* last = name.data() + name.size();
  if (*first < '0' || *first > '9') return std::nullopt;
  const auto [end, error] = std::from_chars(first, last, step);
  if (error != std::errc() || end != last) return std::nullopt;
  return step;
}

}  // namespace est::checkpoint
