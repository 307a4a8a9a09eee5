#include "estimator/exporter.h"

#include <filesystem>

#include "common/error.h"
#include "common/logging.h"
#include "estimator/estimator.h"
#include "estimator/export/export_directory.h"
#include "estimator/export/onnx_exporter.h"
#include "estimator/summary/event_reader.h"

namespace est {
namespace {

// The checks and the export shared by the built-in exporters.
class ExporterBase : public Exporter {
 public:
  ExporterBase(std::string name, ExporterOptions options) : name_(std::move(name)), options_(std::move(options)) {
    EST_CHECK(!name_.empty() && name_.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                        "0123456789._-") == std::string::npos &&
                  name_ != "." && name_ != "..",
              ConfigError, "exporter name '", name_, "': expected letters, digits, '.', '_' and '-' (it names a "
              "directory under model_dir/export)");
    EST_CHECK(options_.serving_input_fn() != nullptr, ConfigError, "exporter '", name_, "' has no serving_input_fn");
    if (options_.onnx()) {
      EST_CHECK(!options_.weights_only(), ConfigError, "exporter '", name_, "' asks for an ONNX model (onnx) of "
                "the weights alone (weights_only); the ONNX model is written from the traced program");
      CheckOnnxOpset(*options_.onnx(), "exporter '" + name_ + "': ExporterOptions::onnx");
    }
    EST_CHECK(options_.exports_to_keep() >= 1, ConfigError, "exporter '", name_, "': exports_to_keep must be at least "
              "1, got ", options_.exports_to_keep());
  }

  const std::string& name() const override { return name_; }

 protected:
  // Exports `checkpoint_path`, unless this exporter exported it already; keeps the newest
  // exports_to_keep when `trim`.
  std::optional<std::string> write(Estimator& estimator, const std::string& export_path,
                                   const std::string& checkpoint_path, const EvalResult& eval_result, bool trim) {
    if (checkpoint_path == last_exported_) return std::nullopt;
    const std::string path = estimator.export_saved_model(
        export_path, options_.serving_input_fn(),
        ExportOptions()
            .checkpoint_path(checkpoint_path)
            .model(options_.model())
            .metrics(eval_result)
            .weights_only(options_.weights_only())
            .class_labels(options_.class_labels())
            .assets(options_.assets())
            .onnx(options_.onnx()));
    last_exported_ = checkpoint_path;
    if (trim) RemoveOldExports(export_path, options_.exports_to_keep());
    return path;
  }

 private:
  const std::string name_;
  const ExporterOptions options_;
  std::string last_exported_;  ///< the checkpoint this exporter exported last
};

class Latest final : public ExporterBase {
 public:
  using ExporterBase::ExporterBase;
  std::optional<std::string> export_model(Estimator& estimator, const std::string& export_path,
                                          const std::string& checkpoint_path, const EvalResult& eval_result,
                                          bool) override {
    return write(estimator, export_path, checkpoint_path, eval_result, /*trim=*/true);
  }
};

class Final final : public ExporterBase {
 public:
  using ExporterBase::ExporterBase;
  std::optional<std::string> export_model(Estimator& estimator, const std::string& export_path,
                                          const std::string& checkpoint_path, const EvalResult& eval_result,
                                          bool is_the_final_export) override {
    if (!is_the_final_export) return std::nullopt;
    return write(estimator, export_path, checkpoint_path, eval_result, /*trim=*/false);
  }
};

class Best final : public ExporterBase {
 public:
  Best(std::string name, ExporterOptions options, ExportCompareFn compare, std::string event_dir)
      : ExporterBase(std::move(name), std::move(options)), compare_(std::move(compare)), event_dir_(std::move(event_dir)) {
    EST_CHECK(compare_ != nullptr, ConfigError, "BestExporter '", this->name(), "' has no compare_fn");
  }

  std::optional<std::string> export_model(Estimator& estimator, const std::string& export_path,
                                          const std::string& checkpoint_path, const EvalResult& eval_result,
                                          bool) override {
    if (!loaded_) load_best(estimator, eval_result);
    if (best_ && !better(*best_, eval_result)) return std::nullopt;
    best_ = eval_result;
    return write(estimator, export_path, checkpoint_path, eval_result, /*trim=*/true);
  }

 private:
  // The best of the evaluations in the event files, but those of this one's global step
  // (written already, by the evaluation that called).
  void load_best(const Estimator& estimator, const EvalResult& current) {
    loaded_ = true;
    const std::string dir = (std::filesystem::path(estimator.model_dir()) / event_dir_).string();
    const double current_step = current.count("global_step") ? current.at("global_step") : -1;
    std::map<int64_t, std::map<std::string, double>> earlier;
    try {
      earlier = ReadEvalMetrics(dir);
    } catch (const Error& error) {
      Log().warn("BestExporter '{}': cannot read the earlier evaluations in {}: {}; the next evaluation counts as "
                 "the best", name(), dir, error.what());
    }
    for (auto& [step, metrics] : earlier) {
      if (static_cast<double>(step) == current_step) continue;
      metrics["global_step"] = static_cast<double>(step);  // as an evaluation's own results hold it
      const EvalResult result(metrics);
      if (!best_ || better(*best_, result)) best_ = result;
    }
  }

  bool better(const EvalResult& best, const EvalResult& current) const {
    try {
      return compare_(best, current);
    } catch (const Error& error) {
      EST_THROW(ConfigError, "BestExporter '", name(), "': its compare_fn failed: ", error.what());
    }
  }

  const ExportCompareFn compare_;
  const std::string event_dir_;
  bool loaded_ = false;
  std::optional<EvalResult> best_;
};

}  // namespace

ExporterPtr LatestExporter(std::string name, ExporterOptions options) {
  return std::make_shared<Latest>(std::move(name), std::move(options));
}

ExporterPtr FinalExporter(std::string name, ExporterOptions options) {
  return std::make_shared<Final>(std::move(name), std::move(options));
}

ExportCompareFn LossSmaller() {
  return [](const EvalResult& best, const EvalResult& current) { return current.at("loss") < best.at("loss"); };
}

ExporterPtr BestExporter(std::string name, ExporterOptions options, ExportCompareFn compare_fn, std::string event_dir) {
  return std::make_shared<Best>(std::move(name), std::move(options), std::move(compare_fn), std::move(event_dir));
}

}  // namespace est
