#pragma once
/// Which output of an export TensorFlow Serving's Classify and Regress answer with: what a server
/// reads their answers from, and what an export checks its class names against.

#include <string>

#include "estimator/export/export_manifest.h"

namespace est {

/// The output Classify answers with: "scores", else "probabilities" (floats, one row of class
/// scores per example); "" when the model has neither.
std::string ClassifyOutput(const ExportManifest& manifest);

/// The output Regress answers with: "outputs", else "predictions", else the one float output of
/// one value per example; "" when there is none.
std::string RegressOutput(const ExportManifest& manifest);

}  // namespace est
