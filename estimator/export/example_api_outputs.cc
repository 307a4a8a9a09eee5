#include "estimator/export/example_api_outputs.h"

#include <c10/core/ScalarType.h>

namespace est {
namespace {

/// A float output of one value per example ([-1] or [-1, 1]), or of a row per example ([-1, n]).
bool FloatRows(const TensorSpec& output, bool one_value) {
  if (!at::isFloatingType(output.dtype) || output.shape.empty() || output.shape.front() >= 0) return false;
  if (one_value) return output.shape.size() == 1 || (output.shape.size() == 2 && output.shape[1] == 1);
  return output.shape.size() == 2;
}

const TensorSpec* Named(const ExportManifest& manifest, const std::string& name) {
  for (const TensorSpec& output : manifest.outputs)
    if (output.name == name) return &output;
  return nullptr;
}

}  // namespace

std::string ClassifyOutput(const ExportManifest& manifest) {
  for (const char* name : {"scores", "probabilities"})
    if (const TensorSpec* output = Named(manifest, name); output != nullptr && FloatRows(*output, false)) return name;
  return "";
}

std::string RegressOutput(const ExportManifest& manifest) {
  for (const char* name : {"outputs", "predictions"})
    if (const TensorSpec* output = Named(manifest, name); output != nullptr && FloatRows(*output, true)) return name;
  std::string found;
  for (const TensorSpec& output : manifest.outputs) {
    if (!FloatRows(output, true)) continue;
    if (!found.empty()) return "";  // more than one: which is meant is not clear
    found = output.name;
  }
  return found;
}

}  // namespace est
