#include "serving/served_model.h"

#include <filesystem>
#include <utility>

#include "common/logging.h"
#include "estimator/export/export_directory.h"

namespace est::serving {
namespace {

/// The names, sizes and modification times of the files of `dir`: what changes when they do.
std::string FilesStamp(const std::string& dir) {
  namespace fs = std::filesystem;
  std::string stamp;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const auto size = entry.is_regular_file(error) ? entry.file_size(error) : 0;
    const auto time = entry.last_write_time(error).time_since_epoch().count();
    stamp += entry.path().filename().string() + ":" + std::to_string(size) + ":" + std::to_string(time) + ";";
  }
  return stamp;
}

}  // namespace

ServedModel::ServedModel(ModelFn model_fn, std::string export_base, ServedModelOptions options)
    : model_fn_(std::move(model_fn)), export_base_(std::move(export_base)), options_(std::move(options)) {
  EST_CHECK(options_.reload_interval().count() >= 0, ConfigError, "reload_interval must not be negative, got ",
            options_.reload_interval().count(), " ms");
  current_ = std::make_shared<const Predictor>(model_fn_, export_base_, options_.predictor());
  if (options_.batching()) batcher_ = std::make_unique<DynamicBatcher>(current_, options_.batching_options());
  if (options_.reload_interval().count() > 0) watcher_ = std::thread([this] { watch(); });
}

ServedModel::~ServedModel() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

TensorMap ServedModel::predict(const Features& request, std::chrono::steady_clock::time_point deadline,
                               int64_t* version) const {
  if (batcher_) return batcher_->predict(request, deadline, version);
  // Held to the end of the call: a version swapped out meanwhile is freed by its last request.
  const std::shared_ptr<const Predictor> predictor = current();
  if (version != nullptr) *version = predictor->version();
  return predictor->predict(request);
}

std::shared_ptr<const Predictor> ServedModel::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

bool ServedModel::reload() {
  std::lock_guard<std::mutex> reloading(reload_mutex_);
  const std::vector<int64_t> versions = ExportVersions(export_base_);
  const int64_t serving = current()->version();
  int64_t newest = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t version : versions) {
      if (version <= serving) continue;
      auto failed = failed_versions_.find(version);
      if (failed == failed_versions_.end() || failed->second != FilesStamp(ExportVersionPath(export_base_, version)))
        newest = version;
    }
  }
  if (newest < 0) return false;
  const std::string path = ExportVersionPath(export_base_, newest);
  const std::string stamp = FilesStamp(path);  // before loading: a change while it loads is seen next time
  std::shared_ptr<const Predictor> loaded;
  try {
    loaded = std::make_shared<const Predictor>(model_fn_, path, options_.predictor());
  } catch (const std::exception& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_versions_[newest] = stamp;
    ++stats_.failed_reloads;
    Log().warn("est-serve: version {} at '{}' does not load, so version {} stays served: {}", newest, path, serving,
               error.what());
    return false;
  }
  // The batches formed from now on run the new version; the old one is freed after the last
  // request holding it.
  if (batcher_) batcher_->set_predictor(loaded);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    current_ = loaded;
    ++stats_.reloads;
  }
  Log().info("est-serve: serving version {} (global step {}) in place of version {}", newest,
             loaded->manifest().global_step, serving);
  return true;
}

void ServedModel::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.wait_for(lock, options_.reload_interval(), [this] { return stopping_; })) {
    lock.unlock();
    try {
      reload();
    } catch (const std::exception& error) {
      Log().warn("est-serve: looking for new versions under '{}' failed: {}", export_base_, error.what());
    }
    lock.lock();
  }
}

ServedModelStats ServedModel::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

BatchingStats ServedModel::batching_stats() const { return batcher_ ? batcher_->stats() : BatchingStats{}; }

}  // namespace est::serving
