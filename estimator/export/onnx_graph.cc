#include "estimator/export/onnx_graph.h"

#include <ATen/ATen.h>

#include <sstream>

#include "common/error.h"

namespace est {

int32_t OnnxElementType(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return onnx::TensorProto::FLOAT;
    case at::kByte: return onnx::TensorProto::UINT8;
    case at::kChar: return onnx::TensorProto::INT8;
    case at::kShort: return onnx::TensorProto::INT16;
    case at::kInt: return onnx::TensorProto::INT32;
    case at::kLong: return onnx::TensorProto::INT64;
    case at::kBool: return onnx::TensorProto::BOOL;
    case at::kHalf: return onnx::TensorProto::FLOAT16;
    case at::kDouble: return onnx::TensorProto::DOUBLE;
    case at::kBFloat16: return onnx::TensorProto::BFLOAT16;
    case at::kComplexFloat: return onnx::TensorProto::COMPLEX64;
    case at::kComplexDouble: return onnx::TensorProto::COMPLEX128;
    default: break;
  }
  EST_THROW(ModelError, "tensors of dtype ", dtype, " have no ONNX element type");
}

onnx::AttributeProto OnnxIntAttribute(const std::string& name, int64_t value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INT);
  attribute.set_i(value);
  return attribute;
}

onnx::AttributeProto OnnxIntsAttribute(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values) attribute.add_ints(value);
  return attribute;
}

onnx::AttributeProto OnnxFloatAttribute(const std::string& name, double value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::FLOAT);
  attribute.set_f(static_cast<float>(value));
  return attribute;
}

onnx::AttributeProto OnnxStringAttribute(const std::string& name, const std::string& value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::STRING);
  attribute.set_s(value);
  return attribute;
}

onnx::AttributeProto OnnxTensorAttribute(const std::string& name, const at::Tensor& value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::TENSOR);
  *attribute.mutable_t() = OnnxTensor(value, "");
  return attribute;
}

onnx::TensorProto OnnxTensor(const at::Tensor& value, const std::string& name) {
  const at::Tensor dense = value.detach().to(at::kCPU).contiguous();
  onnx::TensorProto tensor;
  if (!name.empty()) tensor.set_name(name);
  tensor.set_data_type(OnnxElementType(dense.scalar_type()));
  for (int64_t size : dense.sizes()) tensor.add_dims(size);
  // x86 and ARM hold tensors little-endian, as raw_data has them.
  tensor.set_raw_data(static_cast<const char*>(dense.data_ptr()), dense.numel() * dense.element_size());
  return tensor;
}

std::string OnnxGraph::fresh(const std::string& hint) {
  const std::string base = hint.empty() ? "v" : hint;
  std::string name = base;
  for (int suffix = 1; !names_.insert(name).second; ++suffix) name = base + "_" + std::to_string(suffix);
  return name;
}

std::vector<std::string> OnnxGraph::add(const std::string& op_type, const std::vector<std::string>& inputs,
                                        int outputs, const std::vector<onnx::AttributeProto>& attributes,
                                        const std::string& hint) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op_type);
  node->set_name(fresh("/" + op_type));
  for (const std::string& input : inputs) node->add_input(input);
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) {
    names.push_back(fresh(hint.empty() ? op_type : hint));
    node->add_output(names.back());
  }
  for (const onnx::AttributeProto& attribute : attributes) *node->add_attribute() = attribute;
  // Trailing optional inputs left out are dropped rather than named "".
  while (node->input_size() > 0 && node->input(node->input_size() - 1).empty()) node->mutable_input()->RemoveLast();
  return names;
}

std::string OnnxGraph::add1(const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::vector<onnx::AttributeProto>& attributes, const std::string& hint) {
  return add(op_type, inputs, 1, attributes, hint).front();
}

void OnnxGraph::add_to(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::string& output) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op_type);
  node->set_name(fresh("/" + op_type));
  for (const std::string& input : inputs) node->add_input(input);
  node->add_output(output);
}

std::string OnnxGraph::initializer(const at::Tensor& value, const std::string& hint) {
  const std::string name = fresh(hint.empty() ? "const" : hint);
  *graph_->add_initializer() = OnnxTensor(value, name);
  return name;
}

std::string OnnxGraph::int64s(const std::vector<int64_t>& values) {
  auto it = int64s_.find(values);
  if (it != int64s_.end()) return it->second;
  const at::Tensor tensor = at::tensor(values, at::TensorOptions().dtype(at::kLong));
  const std::string name = initializer(tensor.reshape({static_cast<int64_t>(values.size())}), "ints");
  int64s_.emplace(values, name);
  return name;
}

std::string OnnxGraph::scalar(const at::Scalar& value, at::ScalarType dtype) {
  std::ostringstream text;
  if (value.isIntegral(/*includeBool=*/true))
    text << value.toLong();
  else
    text << std::hexfloat << value.toDouble();
  const auto key = std::make_pair(text.str(), static_cast<int>(dtype));
  auto it = scalars_.find(key);
  if (it != scalars_.end()) return it->second;
  const std::string name = initializer(at::scalar_tensor(value, at::TensorOptions().dtype(dtype)), "scalar");
  scalars_.emplace(key, name);
  return name;
}

}  // namespace est
