#pragma once
/// ServedModel: a model est-serve answers with. It serves the versions of an export base
/// directory its VersionPolicy names (the newest by default), through a DynamicBatcher or one
/// request at a time, and watches the base: a new version is loaded beside those served, then
/// requests that name no version go to the newest while the requests an older one has drain; a
/// version the policy no longer names is unloaded once its last request is answered; a version
/// that fails to load, at start or later, is logged and an older one served (the version is tried
/// again when its files change).

#include <torch/arg.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "serving/dynamic_batcher.h"
#include "serving/model_config.h"
#include "serving/predictor.h"
#include "serving/version_policy.h"

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
  /// Which versions are served (the newest by default).
  TORCH_ARG(VersionPolicy, version_policy);
  /// Names requests may give a version by.
  TORCH_ARG(VersionLabels, version_labels);
};

/// The counts a ServedModel keeps.
struct ServedModelStats {
  int64_t reloads = 0;         ///< versions loaded after the first
  int64_t failed_reloads = 0;  ///< versions that did not load
  int64_t unloads = 0;         ///< versions no longer served
};

/// A model served from an export base directory.
class ServedModel {
 public:
  /// Loads the versions under `export_base` the policy names (for the latest N, the newest that
  /// load, warning of each newer one that does not; those are tried again when their files
  /// change), and starts watching. CheckpointError when there is no version, or none loads
  /// (naming each version's error); `export_base` may also be one export, served as it is.
  /// Without `model_fn` (nullptr) each version's traced program runs (Predictor(export_path, ...)).
  ServedModel(ModelFn model_fn, std::string export_base, ServedModelOptions options = {});
  /// Stops watching; waits for the batch that runs.
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  /// The predictions for `request` of `pinned` (a version find() gave), or, when it is null, of
  /// the newest version served (errors as DynamicBatcher::predict, or Predictor::predict without
  /// batching); `version`, when given, is set to the version that answered (a reload may swap the
  /// newest during the call). A request of more than max_batch_size examples runs in parts, one
  /// after another, all on the version that took it, with other requests' batches between them;
  /// TimeoutError when `deadline` passes between two parts.
  TensorMap predict(const Features& request, std::chrono::steady_clock::time_point deadline,
                    int64_t* version = nullptr, std::shared_ptr<const Predictor> pinned = nullptr) const;

  /// The newest version served (its manifest, path and version).
  std::shared_ptr<const Predictor> current() const;
  /// `version` when it is served, else null.
  std::shared_ptr<const Predictor> find(int64_t version) const;
  /// The version `label` names (it may not be served); nullopt for a label not known.
  std::optional<int64_t> labeled(const std::string& label) const;
  /// The versions served, by number.
  std::map<int64_t, std::shared_ptr<const Predictor>> versions() const;
  /// The export base directory (or export) served.
  const std::string& export_base() const { return export_base_; }
  /// The options it serves by (its version policy among them).
  const ServedModelOptions& options() const { return options_; }
  /// The version labels now.
  VersionLabels version_labels() const;
  /// Names versions by `labels` from now on.
  void set_version_labels(VersionLabels labels);

  /// Looks at the base directory once: loads the versions the policy names that are not served,
  /// and unloads those it no longer names (each once its running requests are answered). True
  /// when what is served changed. Called by the watcher; callable by tests and tools.
  bool reload();

  ServedModelStats stats() const;
  /// The batcher's counts (zero without batching).
  BatchingStats batching_stats() const;

 private:
  using Served = std::map<int64_t, std::shared_ptr<const Predictor>>;

  void watch();
  std::shared_ptr<const Predictor> load(const std::string& path) const;
  /// The versions the policy names that load, with those of `served` kept; `failures` gets the
  /// errors of those that do not. Called with reload_mutex_ held (or from the constructor).
  Served select(const Served& served, std::vector<std::pair<int64_t, std::string>>& failures);
  /// Serves `next` in place of what is served, logging what changed; true when something did.
  bool serve(Served next);
  TensorMap predict_in_parts(const Features& request, int64_t examples, std::chrono::steady_clock::time_point deadline,
                             int64_t* version, const std::shared_ptr<const Predictor>& predictor) const;

  const ModelFn model_fn_;
  const std::string export_base_;
  const ServedModelOptions options_;
  /// `export_base_` is one export, not a base of versions: served as it is, never reloaded.
  bool one_export_ = false;
  std::unique_ptr<DynamicBatcher> batcher_;
  mutable std::mutex mutex_;
  Served served_;
  VersionLabels labels_;
  /// The versions that did not load, with their files' stamp then: tried again once it changes
  /// (a version copied in by hand whose copy was not finished). Guarded by reload_mutex_.
  std::map<int64_t, std::string> failed_versions_;
  ServedModelStats stats_;
  std::mutex reload_mutex_;  ///< one reload at a time
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace est::serving
