#include "estimator/training_end.h"

#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_util.h"
#include "common/json_from_outside.h"
#include "common/quoted_text.h"
#include "distribute/cluster/cluster_config.h"
#include "distribute/rendezvous/grpc_store.h"

namespace est {
namespace {

std::string PathIn(const std::string& model_dir) { return (std::filesystem::path(model_dir) / kTrainingEndName).string(); }

}  // namespace

std::string TrainingEndJob(const distribute::ClusterConfig& cluster) {
  return distribute::DefaultJobId(cluster.chief_address);
}

void WriteTrainingEnd(const std::string& model_dir, const TrainingEnd& end) {
  const nlohmann::json record = {{"global_step", end.global_step}, {"job", end.job}};
  WriteFileAtomic(PathIn(model_dir), record.dump(2) + "\n");
}

void RemoveTrainingEnd(const std::string& model_dir) {
  std::error_code error;
  std::filesystem::remove(PathIn(model_dir), error);
  EST_CHECK(!error, IoError, "cannot remove ", PathIn(model_dir), " (the record of an earlier training's end): ",
            error.message());
}

std::optional<TrainingEnd> ReadTrainingEnd(const std::string& model_dir) {
  const std::string path = PathIn(model_dir);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const IoError&) {
    // The chief removes the record as it trains again: gone between the look and the read, it is
    // absent, not an error.
    if (!std::filesystem::exists(path, error)) return std::nullopt;
    throw;
  }
  const ParsedJson parsed = ParseJsonFromOutside(text);
  const nlohmann::json& record = parsed.value;
  EST_CHECK(parsed.ok() && record.is_object() && record.contains("global_step") &&
                record["global_step"].is_number_integer() && record.contains("job") && record["job"].is_string(),
            CheckpointError, path,
            " is not a record of a training's end (JSON {\"global_step\": <integer>, \"job\": <string>}, written by the "
            "chief)", parsed.ok() ? "" : ": " + OneLine(parsed.error), "; remove it, or let the chief train again");
  return TrainingEnd{record["global_step"].get<int64_t>(), record["job"].get<std::string>()};
}

}  // namespace est
