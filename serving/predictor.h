#pragma once
/// est::serving::Predictor: a trained model outside its model_dir. It loads an export
/// (Estimator::export_saved_model) and runs its traced program — or, given the model_fn that
/// made it, model_fn's Mode::kPredict — on requests, one batch of tensors at a time, with no
/// input_fn, no checkpoint and no autograd.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "estimator/estimator_spec.h"
#include "estimator/export/export_manifest.h"
#include "estimator/export/serving_input.h"
#include "estimator/model_fn.h"

namespace est::serving {

/// A request that does not fit the model's serving signature: an input missing or unknown,
/// or of another dtype or shape. Its message names the input and what was expected.
class RequestError : public Error {
 public:
  using Error::Error;
};

/// How a Predictor loads an export.
struct PredictorOptions {
  /// The model the export must be of: a CheckpointError names the difference for an export of
  /// another name or version. Any model when the name is empty.
  TORCH_ARG(ModelIdentity, model);
  /// The serving input the export must have been made with (the same inputs), whose receiver
  /// maps requests to features (a traced program holds that map already) and whose parser
  /// reads requests of serialized records; unset: the export's inputs go to the model as they are.
  TORCH_ARG(ServingInputFn, serving_input_fn);
  /// Where the model runs: the CPU or a CUDA device. A traced program was traced on the CPU; one
  /// that created tensors there fails its load check elsewhere.
  TORCH_ARG(c10::Device, device) = c10::Device(c10::kCPU);
  /// Copies of the model (Triton's instance count), each with its own variables: that many
  /// predict() calls run at once, each on one copy, so model_fn is called from several threads
  /// at once, each with its own ModelContext. Memory grows by the weights for each copy.
  TORCH_ARG(int64_t, instances) = 1;
};

/// The most model instances a Predictor takes: more is a mistake, not a tuning.
inline constexpr int64_t kMaxModelInstances = 256;

/// Runs an export's model. Thread-safe: as many predict() calls run at once as there are
/// instances; further calls wait for one.
class Predictor {
 public:
  /// Loads `export_path`: an export's version directory, or a base directory, whose newest
  /// version it takes. Builds the model with the export's params and weights and checks it
  /// against the export: a CheckpointError names a missing or corrupt export, another model's,
  /// a variable the export lacks or holds with another shape, and a signature that differs
  /// (inputs of options.serving_input_fn, outputs of model_fn's predictions).
  Predictor(ModelFn model_fn, const std::string& export_path, PredictorOptions options = {});
  /// Loads `export_path` as above and runs its traced program (model.pt): no model code is needed.
  /// A CheckpointError names an export of the weights alone, and a program that does not load or
  /// whose outputs differ from the export's signature.
  explicit Predictor(const std::string& export_path, PredictorOptions options = {});
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  /// The model's predictions for `request`, a batch of the signature's inputs, on the CPU.
  /// RequestError naming the input for a request that does not fit the signature.
  TensorMap predict(const Features& request) const;

  /// The tensors of a request of serialized records, one per example (an export whose
  /// serving input is ParsingServingInputFn's), parsed by the serving input. RequestError naming
  /// the record that does not parse, or when the model takes tensors.
  Features parse_records(const std::vector<std::string>& records) const;
  /// The request's input of serialized records; empty when requests carry tensors.
  const std::string& records_input() const;

  /// What the export says of itself (identity, signature, global step, metrics).
  const ExportManifest& manifest() const;
  /// The export's version directory and version.
  const std::string& path() const;
  int64_t version() const;
  /// How many predict() calls can run at once (PredictorOptions::instances).
  int64_t instances() const;
  /// True when it runs the export's traced program, false when it runs model_fn.
  bool runs_program() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The version directory `export_path` names: itself when it holds an export, else the newest
/// version under it. CheckpointError when there is none.
std::string ResolveExportPath(const std::string& export_path);

}  // namespace est::serving
