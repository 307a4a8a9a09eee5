#pragma once
/// The ONNX file of an export (ExportOptions::onnx): the traced program's forward graph written
/// as an ONNX model, with the program's variables as initializers. Internal to the export.

#include <cstdint>
#include <string>
#include <vector>

#include "estimator/export/tensor_spec.h"

namespace est {

/// ConfigError unless `opset` is one the ONNX export writes (kOnnxMinOpset..kOnnxMaxOpset);
/// `option` names where it was asked for ("ExportOptions::onnx").
void CheckOnnxOpset(int64_t opset, const std::string& option);

/// The bytes of model.onnx (an ONNX ModelProto of IR version 8 and ONNX's operator set `opset`)
/// computing what the TorchScript `program` (TraceProgram's bytes) computes: its inputs are
/// `inputs` in order, named and typed as they are, and its outputs `outputs` in order, a size of
/// -1 written as a named dimension ("batch" for the first, "<name>_<dimension>" for others). The
/// program is run twice, on requests of two free sizes, to find each value's dtype and which of
/// its sizes the request decides; what reads nothing of the request is computed here and written
/// as a constant. ModelError naming the operator and the program's node for one with no ONNX
/// mapping at `opset`, or one whose arguments ONNX cannot take.
std::string ExportOnnx(const std::string& program, const std::vector<TensorSpec>& inputs,
                       const std::vector<TensorSpec>& outputs, int64_t opset);

}  // namespace est
