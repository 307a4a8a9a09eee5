#pragma once
/// OnnxGraph: an ONNX GraphProto as the ONNX export builds it: nodes appended in order, constant
/// tensors as initializers, every value name unique. Internal to the ONNX export.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "estimator/export/onnx.pb.h"

namespace est {

/// ONNX's TensorProto.DataType of `dtype`; ModelError for a dtype ONNX has none of.
int32_t OnnxElementType(at::ScalarType dtype);

/// A node attribute of one integer, integers, one float or one string.
onnx::AttributeProto OnnxIntAttribute(const std::string& name, int64_t value);
onnx::AttributeProto OnnxIntsAttribute(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto OnnxFloatAttribute(const std::string& name, double value);
onnx::AttributeProto OnnxStringAttribute(const std::string& name, const std::string& value);
/// A node attribute holding a tensor (ConstantOfShape's value).
onnx::AttributeProto OnnxTensorAttribute(const std::string& name, const at::Tensor& value);

/// `value` (on any device, any layout) as a TensorProto named `name`, its elements little-endian raw_data.
onnx::TensorProto OnnxTensor(const at::Tensor& value, const std::string& name);

/// The graph being built.
class OnnxGraph {
 public:
  explicit OnnxGraph(onnx::GraphProto* graph) : graph_(graph) {}

  /// Keeps `name` (a graph input's or output's) from the names Fresh hands out.
  void reserve(const std::string& name) { names_.insert(name); }
  /// A value name no other value has: `hint`, or `hint` with a number after it.
  std::string fresh(const std::string& hint);

  /// Appends a node `op_type` reading `inputs` ("" for an optional input left out) and
  /// writing `outputs` new values named after `hint`; returns their names.
  std::vector<std::string> add(const std::string& op_type, const std::vector<std::string>& inputs, int outputs,
                               const std::vector<onnx::AttributeProto>& attributes = {},
                               const std::string& hint = "");
  /// add() of a node of one output.
  std::string add1(const std::string& op_type, const std::vector<std::string>& inputs,
                   const std::vector<onnx::AttributeProto>& attributes = {}, const std::string& hint = "");
  /// Appends a node writing the existing name `output` (a graph output).
  void add_to(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& output);

  /// An initializer holding `value`; returns its name.
  std::string initializer(const at::Tensor& value, const std::string& hint);
  /// A 1-d int64 initializer of `values` (shapes, axes, indices), one per distinct list.
  std::string int64s(const std::vector<int64_t>& values);
  /// A 0-d initializer of `value` as `dtype`, one per distinct value and dtype.
  std::string scalar(const at::Scalar& value, at::ScalarType dtype);

 private:
  onnx::GraphProto* graph_;
  std::set<std::string> names_;
  std::map<std::vector<int64_t>, std::string> int64s_;
  std::map<std::pair<std::string, int>, std::string> scalars_;
};

}  // namespace est
