#include "estimator/model_checkpoint.h"

#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <regex>
#include <sstream>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "estimator/moving_average.h"

namespace est {
namespace {

constexpr const char* kOptimizerBlobPrefix = "optimizer/";

// LibTorch's archive (de)serialization goes through TorchScript's importer, which is not
// safe to run from several threads at once (replicas or workers that are threads).
std::mutex& ArchiveMutex() {
  static std::mutex mutex;
  return mutex;
}

std::string ListSome(const std::vector<std::string>& names) {
  std::string out;
  size_t shown = 0;
  for (const auto& name : names) {
    if (shown++ == 10) return out + ", …";
    out += (out.empty() ? "" : ", ") + name;
  }
  return out.empty() ? "<nothing>" : out;
}

// The fix where a checkpoint is another model's.
constexpr const char* kAnotherModel =
    ". If it is another model's checkpoint, train this model into a new model_dir (Estimator's warm_start_from "
    "starts one from chosen variables of a checkpoint, WarmStartSettings)";

void RestoreVariable(const checkpoint::CheckpointReader& reader, const std::string& name, at::Tensor& variable) {
  EST_CHECK(reader.has_tensor(name), CheckpointError, "variable '", name, "' is not in checkpoint ",
            reader.prefix(), "; the checkpoint has: ", ListSome(reader.tensor_names()), kAnotherModel);
  const std::vector<int64_t> saved_shape = reader.shape(name);
  EST_CHECK(variable.sizes().vec() == saved_shape, CheckpointError, "variable '", name, "' has shape ",
            variable.sizes(), " in the model but ", at::IntArrayRef(saved_shape), " in checkpoint ",
            reader.prefix(), kAnotherModel);
  EST_CHECK(variable.scalar_type() == reader.dtype(name), CheckpointError, "variable '", name, "' has dtype ",
            variable.scalar_type(), " in the model but ", reader.dtype(name), " in checkpoint ", reader.prefix(),
            kAnotherModel);
  torch::NoGradGuard no_grad;
  variable.copy_(reader.tensor(name));
}

// The device of every parameter of `optimizer`, or none when they are on several.
c10::optional<c10::Device> ParameterDevice(const torch::optim::Optimizer& optimizer) {
  c10::optional<c10::Device> device;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& parameter : group.params()) {
      if (!device) device = parameter.device();
      if (*device != parameter.device()) return c10::nullopt;
    }
  }
  return device;
}

// Restores a new optimizer's state from `reader`, where it holds some under the optimizer's name.
std::function<void(const std::string&, torch::optim::Optimizer&)> OptimizerRestorer(
    std::shared_ptr<const checkpoint::CheckpointReader> reader) {
  return [reader](const std::string& name, torch::optim::Optimizer& optimizer) {
    if (auto bytes = reader->blob(kOptimizerBlobPrefix + name)) DeserializeOptimizer(*bytes, name, optimizer);
  };
}

}  // namespace

std::string WorkerInputPositionBlob(int worker) {
  return std::string(kInputPositionBlob) + "/worker_" + std::to_string(worker);
}

CheckpointContents SnapshotModel(const ModelContext& ctx, int64_t global_step) {
  CheckpointContents contents;
  contents.tensors = ctx.variables();
  for (auto& [name, tensor] : contents.tensors) tensor = tensor.detach();
  contents.tensors.emplace_back(kGlobalStepName, torch::tensor(global_step, torch::kInt64));
  for (const auto& [name, optimizer] : ctx.optimizers())
    contents.blobs[kOptimizerBlobPrefix + name] = SerializeOptimizer(*optimizer);
  return contents;
}

ModelContext::Initializers RestoreFromCheckpoint(std::shared_ptr<const checkpoint::CheckpointReader> reader,
                                                 RestoreMode mode) {
  ModelContext::Initializers initializers;
  initializers.variables = [reader, mode](const NamedTensors& variables) {
    for (auto [name, tensor] : variables) {
      const std::string average = name + kMovingAverageSuffix;
      const bool averaged = mode == RestoreMode::kMovingAverages && reader->has_tensor(average);
      RestoreVariable(*reader, averaged ? average : name, tensor);
    }
  };
  if (mode == RestoreMode::kTraining) {
    initializers.optimizer = OptimizerRestorer(reader);
  }
  return initializers;
}

ModelContext::Initializers WarmStartFromCheckpoint(std::shared_ptr<const checkpoint::CheckpointReader> reader,
                                                   const WarmStartSettings& settings) {
  settings.validate();
  auto patterns = std::make_shared<std::vector<std::regex>>();
  for (const std::string& pattern : settings.vars_to_warm_start()) patterns->emplace_back(pattern);
  ModelContext::Initializers initializers;
  initializers.variables = [reader, patterns, settings](const NamedTensors& variables) {
    for (auto [name, tensor] : variables) {
      if (!tensor.requires_grad() && !settings.warm_start_buffers()) continue;
      const std::string& new_name = name;  // a structured binding cannot be captured
      if (std::none_of(patterns->begin(), patterns->end(),
                       [&](const std::regex& pattern) { return std::regex_match(new_name, pattern); }))
        continue;
      const auto renamed = settings.var_name_to_prev_var_name().find(name);
      const std::string& old_name = renamed == settings.var_name_to_prev_var_name().end() ? name : renamed->second;
      EST_CHECK(reader->has_tensor(old_name), CheckpointError, "warm-starting variable '", name, "'",
                old_name == name ? std::string() : " from '" + old_name + "'", ": checkpoint ", reader->prefix(),
                " has no '", old_name, "'; it has: ", ListSome(reader->tensor_names()),
                ". WarmStartSettings::vars_to_warm_start chooses the variables to warm-start and "
                "var_name_to_prev_var_name renames them");
      RestoreVariable(*reader, old_name, tensor);
    }
  };
  if (settings.warm_start_optimizers()) {
    initializers.optimizer = OptimizerRestorer(reader);
  }
  return initializers;
}

std::string SerializeOptimizer(const torch::optim::Optimizer& optimizer) {
  std::lock_guard<std::mutex> lock(ArchiveMutex());
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void DeserializeOptimizer(const std::string& bytes, const std::string& name, torch::optim::Optimizer& optimizer) {
  std::lock_guard<std::mutex> lock(ArchiveMutex());
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    // The state goes where the parameters are, whichever device wrote it: a checkpoint
    // written on a GPU continues on the CPU and the reverse.
    archive.load_from(in, ParameterDevice(optimizer));
    optimizer.load(archive);
  } catch (const c10::Error& e) {
    EST_THROW(CheckpointError, "cannot restore the state of optimizer '", name, "': ", e.what_without_backtrace());
  }
}

}  // namespace est
