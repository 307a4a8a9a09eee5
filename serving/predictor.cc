#include "serving/predictor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/types.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include "common/logging.h"
#include "estimator/model_call.h"
#include "estimator/export/export_directory.h"
#include "estimator/export/exported_program.h"
#include "estimator/export/parsing_serving_input.h"
#include "estimator/export/serving_signature.h"
#include "estimator/model_context.h"

namespace est::serving {

std::string ResolveExportPath(const std::string& export_path) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(fs::path(export_path) / kExportManifestFile)) return export_path;
  const std::vector<int64_t> versions = ExportVersions(export_path);
  EST_CHECK(!versions.empty(), CheckpointError, "no export at '", export_path, "': it is neither an export version (a "
            "directory holding ", kExportManifestFile, ") nor a directory of numbered versions");
  return ExportVersionPath(export_path, versions.back());
}

namespace {

/// What requests carry, for messages: "tensors" or "serialized records in input 'examples'".
std::string RequestForm(const std::string& records_input) {
  return records_input.empty() ? "tensors" : "serialized records in input '" + records_input + "'";
}

}  // namespace

struct Predictor::Impl {
  /// One copy of the model, which runs one request at a time: model_fn's context holding its
  /// variables, or the traced program.
  struct Instance {
    std::unique_ptr<ModelContext> ctx;
    std::optional<ExportedProgram> program;
    std::mutex mutex;
  };

  ModelFn model_fn;  ///< empty where the traced program runs
  c10::Device device = c10::Device(c10::kCPU);
  LoadedExport loaded;
  ServingInputReceiver receiver;
  std::vector<std::unique_ptr<Instance>> instances;
  std::set<std::string> restored;  ///< the export's variables model_fn created
  mutable std::atomic<size_t> next_instance{0};  ///< where a call finding every instance busy waits

  /// Reads the export and checks it against `options`: identity and serving input.
  void load(const std::string& export_path, const PredictorOptions& options) {
    EST_CHECK(options.instances() >= 1 && options.instances() <= kMaxModelInstances, ConfigError,
              "Predictor: instances must be between 1 and ", kMaxModelInstances, ", got ", options.instances());
    device = options.device();
    loaded = ReadExport(ResolveExportPath(export_path));
    const ExportManifest& manifest = loaded.manifest;
    const ModelIdentity& expected = options.model();
    EST_CHECK(expected.name.empty() || expected == manifest.model, CheckpointError, "the export '", loaded.path,
              "' is of model '", manifest.model.name, "' version '", manifest.model.version, "'; expected model '",
              expected.name, "' version '", expected.version, "'");
    if (options.serving_input_fn()) {
      receiver = options.serving_input_fn()();
      ValidateServingInputReceiver(receiver);
      const std::string difference =
          SignatureDifference(receiver.inputs, manifest.inputs, "input", "here", "in the export '" + loaded.path + "'");
      EST_CHECK(difference.empty(), CheckpointError, "the serving input differs from the export's: ", difference);
      EST_CHECK(receiver.records_input == manifest.records_input, CheckpointError,
                "the serving input differs from the export's: requests carry ", RequestForm(receiver.records_input),
                " here but ", RequestForm(manifest.records_input), " in the export '", loaded.path, "'");
    } else if (!manifest.records_input.empty()) {
      // The records, parsed as the export records their features.
      EST_CHECK(!manifest.record_features.empty(), CheckpointError, "the export '", loaded.path, "' takes ",
                RequestForm(manifest.records_input), " whose features only its serving input parses (bytes decoded, "
                "variable-length, or strings made ids); expected PredictorOptions::serving_input_fn, the one it was "
                "exported with");
      receiver = RecordedServingInputFn(manifest.record_features, manifest.records_input)();
      const std::string difference = SignatureDifference(receiver.inputs, manifest.inputs, "input", "as its records' "
                                                         "features say", "in its signature");
      EST_CHECK(difference.empty(), CheckpointError, "the export '", loaded.path, "' is corrupt: ", difference);
    } else {
      receiver.inputs = manifest.inputs;
    }
  }

  /// The predictions of a request that fits the signature, where they are computed.
  TensorMap run(const Features& request, Instance& instance) const {
    if (instance.program) {
      Features on_device;
      for (const auto& [name, tensor] : request) on_device.emplace(name, tensor.to(device));
      return (*instance.program)(on_device);
    }
    ModelContext& ctx = *instance.ctx;
    data::Element element;
    element.features = receiver.receiver ? receiver.receiver(request) : request;
    return CallModelFn(model_fn, ToDevice(std::move(element), ctx), Mode::kPredict, ctx, loaded.manifest.global_step,
                       MixedPrecision::kNone)
        .predictions;
  }

  /// `request`'s predictions on a free instance; when every one is busy, on the next in turn
  /// once it is free.
  TensorMap run_on_an_instance(const Features& request) const {
    for (const auto& instance : instances) {
      std::unique_lock<std::mutex> lock(instance->mutex, std::try_to_lock);
      if (lock.owns_lock()) return run(request, *instance);
    }
    Instance& instance = *instances[next_instance++ % instances.size()];
    std::lock_guard<std::mutex> lock(instance.mutex);
    return run(request, instance);
  }

  /// Adds `instance` once its outputs on example requests are the export's; `what` names the model.
  void add_checked(std::unique_ptr<Instance> instance, const std::string& what) {
    const std::vector<TensorSpec> outputs =
        OutputSignature(receiver.inputs, [&](const Features& request) { return run(request, *instance); });
    const std::string difference =
        SignatureDifference(outputs, loaded.manifest.outputs, "output", "from " + what, "in the export '" + loaded.path + "'");
    EST_CHECK(difference.empty(), CheckpointError, what, "'s predictions differ from the export's: ", difference);
    instances.push_back(std::move(instance));
  }

  void log_loaded(const PredictorOptions& options, const char* runs) const {
    const ExportManifest& manifest = loaded.manifest;
    Log().info("Loaded export {} of model '{}' version '{}' (global step {}) on {}, running {}{}", loaded.path,
               manifest.model.name, manifest.model.version, manifest.global_step, options.device().str(), runs,
               options.instances() > 1 ? ", " + std::to_string(options.instances()) + " instances" : std::string());
  }
};

Predictor::Predictor(ModelFn model_fn, const std::string& export_path, PredictorOptions options)
    : impl_(std::make_unique<Impl>()) {
  EST_CHECK(model_fn != nullptr, ConfigError, "Predictor: model_fn is empty");
  impl_->model_fn = std::move(model_fn);
  impl_->load(export_path, options);
  const LoadedExport& loaded = impl_->loaded;

  // Each instance's model, its variables filled from the export's weights as model_fn creates them.
  ModelContext::Initializers initializers;
  initializers.variables = [impl = impl_.get()](const NamedTensors& variables) {
    const LoadedExport& loaded = impl->loaded;
    torch::NoGradGuard no_grad;
    for (const auto& [name, variable] : variables) {
      auto it = loaded.weights.find(name);
      EST_CHECK(it != loaded.weights.end(), CheckpointError, "model_fn creates variable '", name,
                "', which the export '", loaded.path, "' does not hold");
      EST_CHECK(it->second.sizes() == variable.sizes() && it->second.scalar_type() == variable.scalar_type(),
                CheckpointError, "variable '", name, "' is ", variable.scalar_type(), " ", variable.sizes(),
                " in model_fn but ", it->second.scalar_type(), " ", it->second.sizes(), " in the export '", loaded.path,
                "'");
      variable.copy_(it->second);
      impl->restored.insert(name);
    }
  };
  const auto params = std::make_shared<const nlohmann::json>(loaded.manifest.params);
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; i < options.instances(); ++i) {
    auto instance = std::make_unique<Impl::Instance>();
    // Example requests create every variable and give the outputs, which must be the export's.
    instance->ctx = std::make_unique<ModelContext>(params, options.device(), initializers);
    impl_->add_checked(std::move(instance), "model_fn");
  }
  for (const auto& [name, weight] : loaded.weights)
    EST_CHECK(impl_->restored.count(name) != 0, CheckpointError, "the export '", loaded.path, "' holds variable '", name,
              "', which model_fn does not create in Mode::kPredict");
  impl_->log_loaded(options, "model_fn");
}

Predictor::Predictor(const std::string& export_path, PredictorOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->load(export_path, options);
  LoadedExport& loaded = impl_->loaded;
  EST_CHECK(loaded.manifest.program.has_value(), CheckpointError, "the export '", loaded.path,
            "' holds weights only (exported with ExportOptions::weights_only): it runs only with the model_fn that "
            "made it (Predictor(model_fn, ...), est-serve --model)");
  loaded.weights.clear();  // the program holds its own
  impl_->receiver.receiver = nullptr;  // the program maps requests to features itself
  const std::string program = ReadExportFile(loaded.path, loaded.manifest.program->record);
  const std::string source = (std::filesystem::path(loaded.path) / kExportProgramFile).string();
  std::vector<std::string> input_names;
  for (const TensorSpec& input : impl_->receiver.inputs) input_names.push_back(input.name);
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; i < options.instances(); ++i) {
    auto instance = std::make_unique<Impl::Instance>();
    instance->program.emplace(program, input_names, source, options.device());
    impl_->add_checked(std::move(instance), "the program");
  }
  impl_->log_loaded(options, "its traced program");
}

Predictor::~Predictor() = default;

TensorMap Predictor::predict(const Features& request) const {
  const std::string mismatch = RequestMismatch(impl_->receiver.inputs, request);
  if (!mismatch.empty()) throw RequestError(mismatch);
  // A thread LibTorch did not make (a server's, a batcher's) takes the process's intra-op thread
  // count, as LibTorch's own threads do, instead of OpenMP's default of every core.
  thread_local const bool threads_set = [] {
    at::init_num_threads();
    return true;
  }();
  (void)threads_set;
  TensorMap predictions;
  {
    c10::InferenceMode inference;
    predictions = impl_->run_on_an_instance(request);
  }
  for (auto& [name, tensor] : predictions) tensor = tensor.to(at::kCPU);
  return predictions;
}

Features Predictor::parse_records(const std::vector<std::string>& records) const {
  EST_CHECK(impl_->receiver.parse_records != nullptr, RequestError, "the model takes tensors (",
            QuotedNames(impl_->receiver.inputs), "), not serialized records");
  try {
    return impl_->receiver.parse_records(records);
  } catch (const DataError& error) {
    throw RequestError(error.what());
  }
}

const std::string& Predictor::records_input() const { return impl_->loaded.manifest.records_input; }

const ExportManifest& Predictor::manifest() const { return impl_->loaded.manifest; }
const std::string& Predictor::path() const { return impl_->loaded.path; }
int64_t Predictor::version() const { return impl_->loaded.version; }
int64_t Predictor::instances() const { return static_cast<int64_t>(impl_->instances.size()); }
bool Predictor::runs_program() const { return impl_->model_fn == nullptr; }

}  // namespace est::serving
