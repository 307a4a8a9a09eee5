#include "serving/served_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/logging.h"
#include "estimator/export/export_directory.h"
#include "estimator/export/serving_signature.h"

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

// The examples of `request`: the rows of its inputs batched along dimension 0 (the largest, where
// a mismatch is left to the model's check); 1 when no input is (a request that runs alone).
int64_t BatchRows(const std::vector<TensorSpec>& inputs, const Features& request) {
  int64_t rows = 1;
  bool batched = false;
  for (const TensorSpec& input : inputs) {
    const auto it = request.find(input.name);
    if (input.shape.empty() || input.shape.front() >= 0 || it == request.end() || it->second.dim() == 0) continue;
    rows = batched ? std::max(rows, it->second.size(0)) : it->second.size(0);
    batched = true;
  }
  return rows;
}

}  // namespace

ServedModel::ServedModel(ModelFn model_fn, std::string export_base, ServedModelOptions options)
    : model_fn_(std::move(model_fn)), export_base_(std::move(export_base)), options_(std::move(options)) {
  EST_CHECK(options_.reload_interval().count() >= 0, ConfigError, "reload_interval must not be negative, got ",
            options_.reload_interval().count(), " ms");
  EST_CHECK(options_.max_request_examples() >= 1, ConfigError, "max_request_examples must be at least 1, got ",
            options_.max_request_examples());
  options_.batching_options().validate();  // its max_batch_size bounds a model call, batching or not
  current_ = load_newest_valid();
  if (options_.batching()) batcher_ = std::make_unique<DynamicBatcher>(current_, options_.batching_options());
  if (options_.reload_interval().count() > 0) watcher_ = std::thread([this] { watch(); });
}

std::shared_ptr<const Predictor> ServedModel::load(const std::string& path) const {
  return model_fn_ ? std::make_shared<const Predictor>(model_fn_, path, options_.predictor())
                   : std::make_shared<const Predictor>(path, options_.predictor());
}

std::shared_ptr<const Predictor> ServedModel::load_newest_valid() {
  namespace fs = std::filesystem;
  const std::vector<int64_t> versions = ExportVersions(export_base_);
  // One export (not a base of versions), a base of one version, or none: served as it is, or
  // refused with Predictor's error.
  if (versions.size() <= 1 || fs::is_regular_file(fs::path(export_base_) / kExportManifestFile))
    return load(export_base_);
  std::vector<std::pair<int64_t, std::string>> failures;  // newest first
  for (auto version = versions.rbegin(); version != versions.rend(); ++version) {
    const std::string path = ExportVersionPath(export_base_, *version);
    const std::string stamp = FilesStamp(path);
    try {
      auto loaded = load(path);
      for (const auto& [failed, error] : failures)
        Log().warn("est-serve: version {} at '{}' does not load, so an older one is served: {}", failed,
                   ExportVersionPath(export_base_, failed), error);
      if (!failures.empty())
        Log().info("est-serve: serving version {} (global step {}), the newest that loads", *version,
                   loaded->manifest().global_step);
      return loaded;
    } catch (const std::exception& error) {
      failed_versions_[*version] = stamp;  // tried again, as a newer version, once its files change
      failures.emplace_back(*version, error.what());
    }
  }
  std::string listed;
  for (const auto& [version, error] : failures)
    listed += (listed.empty() ? "" : "; ") + ("version " + std::to_string(version) + ": " + error);
  EST_THROW(CheckpointError, "no version under '", export_base_, "' loads (", listed, ")");
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
  const int64_t examples = BatchRows(current()->manifest().inputs, request);
  EST_CHECK(examples <= options_.max_request_examples(), RequestError, "the request carries ", examples,
            " examples; the most a request may carry is ", options_.max_request_examples(),
            " (max_request_examples, est-serve --max-request-examples): send them in several requests");
  if (examples > options_.batching_options().max_batch_size())
    return predict_in_parts(request, examples, deadline, version);
  if (batcher_) return batcher_->predict(request, deadline, version);
  // Held to the end of the call: a version swapped out meanwhile is freed by its last request.
  const std::shared_ptr<const Predictor> predictor = current();
  if (version != nullptr) *version = predictor->version();
  return predictor->predict(request);
}

TensorMap ServedModel::predict_in_parts(const Features& request, int64_t examples,
                                        std::chrono::steady_clock::time_point deadline, int64_t* version) const {
  // Held to the end: every part is answered by one version, whatever a reload swaps in meanwhile.
  const std::shared_ptr<const Predictor> predictor = current();
  if (const std::string mismatch = RequestMismatch(predictor->manifest().inputs, request); !mismatch.empty())
    throw RequestError(mismatch);
  const int64_t part_size = options_.batching_options().max_batch_size();
  std::map<std::string, std::vector<at::Tensor>> parts;
  for (int64_t start = 0; start < examples; start += part_size) {
    EST_CHECK(std::chrono::steady_clock::now() < deadline, TimeoutError, "the request's deadline passed after ", start,
              " of its ", examples, " examples (it runs in parts of max_batch_size ", part_size, ")");
    Features part;
    for (const auto& [name, tensor] : request) part[name] = tensor.narrow(0, start, std::min(part_size, examples - start));
    for (auto& [name, tensor] : predictor->predict(part)) parts[name].push_back(std::move(tensor));
  }
  TensorMap predictions;
  for (auto& [name, tensors] : parts) predictions[name] = at::cat(tensors, 0);
  if (version != nullptr) *version = predictor->version();
  return predictions;
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
    loaded = load(path);
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
