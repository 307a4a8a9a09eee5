#pragma once
/// ExportedProgram: an export's traced program (model.pt, a TorchScript module) loaded to run
/// without the code of the model_fn that made it, as est-serve runs any export.

#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "data/element.h"
#include "estimator/estimator_spec.h"

namespace est {

/// A traced program, ready to run. Not thread-safe: one call at a time (load one per thread).
class ExportedProgram {
 public:
  /// Loads the TorchScript module in `bytes` onto `device`; its forward takes `input_names`' tensors
  /// in that order. CheckpointError naming `source` (the file) when the bytes are not a
  /// TorchScript module with a forward method.
  ExportedProgram(const std::string& bytes, std::vector<std::string> input_names, const std::string& source,
                  c10::Device device = c10::Device(c10::kCPU));
  ~ExportedProgram();
  ExportedProgram(ExportedProgram&&) noexcept;
  ExportedProgram& operator=(ExportedProgram&&) noexcept;

  /// The program's outputs by name for `request`, which holds a tensor of each input name (on
  /// the program's device). ModelError naming the program when it fails or returns something
  /// other than a dictionary of tensors by name.
  TensorMap operator()(const Features& request) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace est
