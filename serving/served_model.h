#pragma once
/// ServedModel: the model est-serve answers with. It serves the newest version under an export
/// base directory, through a DynamicBatcher or one request at a time, and watches the base for
/// newer versions: a new one is loaded beside the current, then requests go to it while the
/// requests the old one has drain; a version that fails to load, at start or later, is logged and
/// an older one served (the version is tried again when its files change).

#include <torch/arg.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <map>
#include <string>
#include <thread>

#include "serving/dynamic_batcher.h"
#include "serving/predictor.h"

namespace est::serving {

/// How a ServedModel loads, batches and reloads.
struct ServedModelOptions {
  /// How each version is loaded (the identity and serving input it must have, the device).
  TORCH_ARG(PredictorOptions, predictor);
  /// Batch concurrent requests (DynamicBatcher); otherwise each runs alone.
  TORCH_ARG(bool, batching) = true;
  TORCH_ARG(BatchingOptions, batching_options);
  /// The most examples (rows along dimension 0) a request may carry; RequestError beyond. A
  /// request of more than batching_options().max_batch_size examples runs in parts of that size,
  /// with or without batching, so that no model call computes more than a batch.
  TORCH_ARG(int64_t, max_request_examples) = 65536;
  /// How often the base directory is looked at for a new version; 0: never.
  TORCH_ARG(std::chrono::milliseconds, reload_interval) = std::chrono::milliseconds(1000);
};

/// The counts a ServedModel keeps.
struct ServedModelStats {
  int64_t reloads = 0;         ///< new versions served
  int64_t failed_reloads = 0;  ///< versions that did not load
};

/// A model served from an export base directory.
class ServedModel {
 public:
  /// Loads the newest version under `export_base` that loads, warning of each newer one that
  /// does not (those are tried again when their files change), and starts watching.
  /// CheckpointError when there is no version, or none loads (naming each version's error);
  /// `export_base` may also be one export, served as it is. Without `model_fn` (nullptr) each
  /// version's traced program runs (Predictor(export_path, ...)).
  ServedModel(ModelFn model_fn, std::string export_base, ServedModelOptions options = {});
  /// Stops watching; waits for the batch that runs.
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  /// The predictions of the version served now for `request` (errors as
  /// DynamicBatcher::predict, or Predictor::predict without batching); `version`, when given,
  /// is set to the version that answered (a reload may swap versions during the call). A
  /// request of more than max_batch_size examples runs in parts, one after another, all on the
  /// version that took it, with other requests' batches between them; TimeoutError when
  /// `deadline` passes between two parts.
  TensorMap predict(const Features& request, std::chrono::steady_clock::time_point deadline,
                    int64_t* version = nullptr) const;

  /// The version served now (its manifest, path and version).
  std::shared_ptr<const Predictor> current() const;

  /// Looks at the base directory once: loads and serves a version newer than the current one.
  /// True when it served one. Called by the watcher; callable by tests and tools.
  bool reload();

  ServedModelStats stats() const;
  /// The batcher's counts (zero without batching).
  BatchingStats batching_stats() const;

 private:
  void watch();
  std::shared_ptr<const Predictor> load(const std::string& path) const;
  std::shared_ptr<const Predictor> load_newest_valid();
  TensorMap predict_in_parts(const Features& request, int64_t examples, std::chrono::steady_clock::time_point deadline,
                             int64_t* version) const;

  const ModelFn model_fn_;
  const std::string export_base_;
  const ServedModelOptions options_;
  std::unique_ptr<DynamicBatcher> batcher_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Predictor> current_;
  /// The versions that did not load, with their files' stamp then: tried again once it changes
  /// (a version copied in by hand whose copy was not finished).
  std::map<int64_t, std::string> failed_versions_;
  ServedModelStats stats_;
  std::mutex reload_mutex_;  ///< one reload at a time
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace est::serving
