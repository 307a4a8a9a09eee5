#include "serving/served_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <optional>
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

/// " (version 3: why; version 2: why)", or " (it names none there)" when none failed.
std::string FailuresListed(const std::vector<std::pair<int64_t, std::string>>& failures) {
  std::string listed;
  for (const auto& [version, error] : failures)
    listed += (listed.empty() ? "" : "; ") + ("version " + std::to_string(version) + ": " + error);
  return listed.empty() ? " (it names none there)" : " (" + listed + ")";
}

}  // namespace

ServedModel::ServedModel(ModelFn model_fn, std::string export_base, ServedModelOptions options)
    : model_fn_(std::move(model_fn)),
      export_base_(std::move(export_base)),
      options_(std::move(options)),
      labels_(options_.version_labels()) {
  EST_CHECK(options_.reload_interval().count() >= 0, ConfigError, "reload_interval must not be negative, got ",
            options_.reload_interval().count(), " ms");
  EST_CHECK(options_.max_request_examples() >= 1, ConfigError, "max_request_examples must be at least 1, got ",
            options_.max_request_examples());
  options_.batching_options().validate();  // its max_batch_size bounds a model call, batching or not
  namespace fs = std::filesystem;
  std::error_code error;
  one_export_ = fs::is_regular_file(fs::path(export_base_) / kExportManifestFile, error);
  if (one_export_ || ExportVersions(export_base_).empty()) {
    // One export, served as it is; or none, refused with Predictor's error.
    auto loaded = load(export_base_);
    served_.emplace(loaded->version(), std::move(loaded));
  } else {
    std::vector<std::pair<int64_t, std::string>> failures;
    Served served = select({}, failures);
    EST_CHECK(!served.empty(), CheckpointError, "no version under '", export_base_, "' that version policy ",
              options_.version_policy().describe(), " names loads", FailuresListed(failures));
    for (const auto& [version, error] : failures)
      Log().warn("est-serve: version {} at '{}' does not load, so it is not served (it is tried again when its files "
                 "change): {}", version, ExportVersionPath(export_base_, version), error);
    serve(std::move(served));
  }
  if (options_.batching()) batcher_ = std::make_unique<DynamicBatcher>(current(), options_.batching_options());
  if (options_.reload_interval().count() > 0 && !one_export_) watcher_ = std::thread([this] { watch(); });
}

std::shared_ptr<const Predictor> ServedModel::load(const std::string& path) const {
  return model_fn_ ? std::make_shared<const Predictor>(model_fn_, path, options_.predictor())
                   : std::make_shared<const Predictor>(path, options_.predictor());
}

ServedModel::Served ServedModel::select(const Served& served, std::vector<std::pair<int64_t, std::string>>& failures) {
  const std::vector<int64_t> on_disk = ExportVersions(export_base_);
  Served next;
  while (true) {
    // The versions that may load: a version that failed is tried again once its files change.
    std::vector<int64_t> candidates;
    for (int64_t version : on_disk) {
      const auto failed = failed_versions_.find(version);
      if (failed == failed_versions_.end() || failed->second != FilesStamp(ExportVersionPath(export_base_, version)))
        candidates.push_back(version);
    }
    const std::vector<int64_t> wanted = options_.version_policy().select(candidates);
    bool failed = false;
    for (auto version = wanted.rbegin(); version != wanted.rend() && !failed; ++version) {
      if (next.count(*version) != 0) continue;
      if (const auto kept = served.find(*version); kept != served.end()) {
        next.emplace(*kept);
        continue;
      }
      const std::string path = ExportVersionPath(export_base_, *version);
      const std::string stamp = FilesStamp(path);  // before loading: a change while it loads is seen next time
      try {
        next.emplace(*version, load(path));
      } catch (const std::exception& error) {
        failed_versions_[*version] = stamp;
        failures.emplace_back(*version, error.what());
        failed = true;  // the policy may name another version in its place
      }
    }
    if (failed) continue;
    for (auto it = next.begin(); it != next.end();)
      it = std::find(wanted.begin(), wanted.end(), it->first) == wanted.end() ? next.erase(it) : std::next(it);
    return next;
  }
}

bool ServedModel::serve(Served next) {
  Served before;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (next == served_) return false;
    before = served_;
    served_ = next;
  }
  // The batches formed from now on for requests of no version run the newest.
  if (batcher_) batcher_->set_predictor(next.rbegin()->second);
  int64_t loaded = 0;
  int64_t unloaded = 0;
  for (const auto& [version, predictor] : next) {
    if (before.count(version) != 0) continue;
    ++loaded;
    Log().info("est-serve: serving version {} (global step {}) of '{}'", version, predictor->manifest().global_step,
               export_base_);
  }
  for (const auto& [version, predictor] : before) {
    if (next.count(version) != 0) continue;
    ++unloaded;
    Log().info("est-serve: version {} of '{}' is no longer served; it is unloaded once its running requests are "
               "answered", version, export_base_);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!before.empty()) stats_.reloads += loaded;
  stats_.unloads += unloaded;
  return true;
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
                               int64_t* version, std::shared_ptr<const Predictor> pinned) const {
  // Held to the end of the call: a version unloaded meanwhile is freed by its last request.
  const std::shared_ptr<const Predictor> predictor = pinned ? pinned : current();
  const int64_t examples = BatchRows(predictor->manifest().inputs, request);
  EST_CHECK(examples <= options_.max_request_examples(), RequestError, "the request carries ", examples,
            " examples; the most a request may carry is ", options_.max_request_examples(),
            " (max_request_examples, est-serve --max-request-examples): send them in several requests");
  if (examples > options_.batching_options().max_batch_size())
    return predict_in_parts(request, examples, deadline, version, predictor);
  if (batcher_) return batcher_->predict(request, deadline, version, std::move(pinned));
  if (version != nullptr) *version = predictor->version();
  return predictor->predict(request);
}

TensorMap ServedModel::predict_in_parts(const Features& request, int64_t examples,
                                        std::chrono::steady_clock::time_point deadline, int64_t* version,
                                        const std::shared_ptr<const Predictor>& predictor) const {
  // Every part is answered by one version, whatever a reload swaps in meanwhile.
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
  return served_.rbegin()->second;
}

std::shared_ptr<const Predictor> ServedModel::find(int64_t version) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = served_.find(version);
  return it == served_.end() ? nullptr : it->second;
}

std::optional<int64_t> ServedModel::labeled(const std::string& label) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = labels_.find(label);
  return it == labels_.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

std::map<int64_t, std::shared_ptr<const Predictor>> ServedModel::versions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return served_;
}

VersionLabels ServedModel::version_labels() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return labels_;
}

void ServedModel::set_version_labels(VersionLabels labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  labels_ = std::move(labels);
}

bool ServedModel::reload() {
  std::lock_guard<std::mutex> reloading(reload_mutex_);
  if (one_export_) return false;
  const Served served = versions();
  std::vector<std::pair<int64_t, std::string>> failures;
  Served next = select(served, failures);
  for (const auto& [version, error] : failures)
    Log().warn("est-serve: version {} at '{}' does not load (it is tried again when its files change): {}", version,
               ExportVersionPath(export_base_, version), error);
  if (!failures.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.failed_reloads += static_cast<int64_t>(failures.size());
  }
  if (next.empty()) {
    // The base emptied, or nothing the policy names loads: what is served stays.
    return false;
  }
  return serve(std::move(next));
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
