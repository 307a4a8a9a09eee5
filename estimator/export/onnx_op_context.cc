#include "estimator/export/onnx_op_context.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace est {
namespace onnx_ctx {
namespace {

/// The name of a constant's initializer: the program's name of the value ("cnn_conv_weight"
/// for "cnn_conv_weight.1"), or "const".
std::string ConstantHint(const torch::jit::Value* source) {
  if (source == nullptr || !source->hasDebugName()) return "const";
  std::string name = source->debugName();
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

/// A node as the program prints it, on one line, without its source comment.
std::string NodeText(const torch::jit::Node& node) {
  std::ostringstream text;
  text << node;
  std::string line = text.str();
  const size_t comment = line.find(" #");
  if (comment != std::string::npos) line.resize(comment);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  const size_t start = line.find_first_not_of(' ');
  return start == std::string::npos ? line : line.substr(start);
}

}  // namespace
}  // namespace onnx_ctx

const c10::IValue& OnnxOpContext::example(size_t i) const { return input(i).example[0]; }

bool OnnxOpContext::numeric(size_t i) const {
  return example(i).isInt() || example(i).isDouble() || example(i).isBool();
}

int64_t OnnxOpContext::integer(size_t i) const {
  if (dynamic(i)) fail("needs argument " + std::to_string(i) + " constant, but it depends on the request");
  if (!example(i).isInt()) fail("has argument " + std::to_string(i) + " of type " + example(i).tagKind() +
                                "; expected an integer");
  return example(i).toInt();
}

double OnnxOpContext::number(size_t i) const {
  if (dynamic(i)) fail("needs argument " + std::to_string(i) + " constant, but it depends on the request");
  if (example(i).isDouble()) return example(i).toDouble();
  if (example(i).isInt()) return static_cast<double>(example(i).toInt());
  if (example(i).isBool()) return example(i).toBool() ? 1 : 0;
  fail("has argument " + std::to_string(i) + " of type " + example(i).tagKind() + "; expected a number");
}

bool OnnxOpContext::boolean(size_t i) const {
  if (dynamic(i)) fail("needs argument " + std::to_string(i) + " constant, but it depends on the request");
  if (!example(i).isBool()) fail("has argument " + std::to_string(i) + " of type " + example(i).tagKind() +
                                 "; expected a boolean");
  return example(i).toBool();
}

std::vector<int64_t> OnnxOpContext::integers(size_t i) const {
  if (dynamic(i)) fail("needs argument " + std::to_string(i) + " constant, but it depends on the request");
  if (example(i).isInt()) return {example(i).toInt()};
  if (!example(i).isIntList()) fail("has argument " + std::to_string(i) + " of type " + example(i).tagKind() +
                                    "; expected a list of integers");
  return example(i).toIntVector();
}

std::string OnnxOpContext::text(size_t i) const {
  if (dynamic(i) || !example(i).isString()) fail("needs argument " + std::to_string(i) + " a constant string");
  return example(i).toStringRef();
}

at::Tensor OnnxOpContext::constant(size_t i) const {
  if (dynamic(i)) fail("needs argument " + std::to_string(i) + " constant, but it depends on the request");
  if (!example(i).isTensor()) fail("has argument " + std::to_string(i) + " of type " + example(i).tagKind() +
                                   "; expected a tensor");
  return example(i).toTensor();
}

namespace onnx_ctx {
namespace {

/// The dtype of a tensor's or number's example; Undefined for another value.
at::ScalarType DtypeOfExample(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor().scalar_type();
  if (value.isInt()) return at::kLong;
  if (value.isDouble()) return at::kDouble;
  if (value.isBool()) return at::kBool;
  return at::ScalarType::Undefined;
}

/// A tensor's sizes in the first probe run, -1 where the second run's differ.
std::vector<int64_t> SizesOfExamples(const std::array<c10::IValue, 2>& example) {
  if (!example[0].isTensor()) return {};
  std::vector<int64_t> sizes = example[0].toTensor().sizes().vec();
  if (example[1].isTensor() && example[1].toTensor().dim() == static_cast<int64_t>(sizes.size()))
    for (size_t d = 0; d < sizes.size(); ++d)
      if (example[1].toTensor().size(static_cast<int64_t>(d)) != sizes[d]) sizes[d] = -1;
  return sizes;
}

}  // namespace
}  // namespace onnx_ctx

at::ScalarType OnnxOpContext::dtype(size_t i) const {
  const at::ScalarType dtype = onnx_ctx::DtypeOfExample(example(i));
  if (dtype == at::ScalarType::Undefined)
    fail("has argument " + std::to_string(i) + " of type " + example(i).tagKind() + "; expected a tensor or a number");
  return dtype;
}

int64_t OnnxOpContext::rank(size_t i) const { return example(i).isTensor() ? example(i).toTensor().dim() : 0; }

std::vector<int64_t> OnnxOpContext::sizes(size_t i) const { return onnx_ctx::SizesOfExamples(input(i).example); }

at::ScalarType OnnxOpContext::output_dtype(size_t o) const {
  const at::ScalarType dtype = onnx_ctx::DtypeOfExample(outputs_.at(o)->example[0]);
  if (dtype == at::ScalarType::Undefined) fail("has output " + std::to_string(o) + " that is not a tensor or number");
  return dtype;
}

int64_t OnnxOpContext::output_rank(size_t o) const {
  const c10::IValue& value = outputs_.at(o)->example[0];
  return value.isTensor() ? value.toTensor().dim() : 0;
}

std::vector<int64_t> OnnxOpContext::output_sizes(size_t o) const {
  return onnx_ctx::SizesOfExamples(outputs_.at(o)->example);
}

int64_t OnnxOpContext::axis(int64_t d, int64_t rank) const {
  const int64_t axis = d < 0 ? d + rank : d;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    fail("has dimension " + std::to_string(d) + " out of range for a tensor of rank " + std::to_string(rank));
  return axis;
}

std::string OnnxOpContext::materialize(const OnnxValue& value, const torch::jit::Value* source,
                                       std::optional<at::ScalarType> as) {
  const c10::IValue& example = value.example[0];
  if (example.isNone()) return "";
  if (example.isTensor()) {
    const at::Tensor tensor = example.toTensor();
    const at::ScalarType dtype = as.value_or(tensor.scalar_type());
    const auto key = std::make_pair(source, static_cast<int>(dtype));
    if (source != nullptr) {
      auto it = state_.constants.find(key);
      if (it != state_.constants.end()) return it->second;
    }
    const std::string name = graph().initializer(tensor.to(dtype), onnx_ctx::ConstantHint(source));
    if (source != nullptr) state_.constants.emplace(key, name);
    return name;
  }
  if (example.isInt() || example.isDouble() || example.isBool()) {
    const at::ScalarType natural = onnx_ctx::DtypeOfExample(example);
    const at::Scalar scalar = example.isInt()    ? at::Scalar(example.toInt())
                              : example.isDouble() ? at::Scalar(example.toDouble())
                                                   : at::Scalar(example.toBool());
    return graph().scalar(scalar, as.value_or(natural));
  }
  if (example.isIntList()) {
    if (!as || *as == at::kLong) return graph().int64s(example.toIntVector());
    return graph().initializer(at::tensor(example.toIntVector()).to(*as), "ints");
  }
  if (example.isDoubleList()) {
    const std::vector<double> values = example.toDoubleVector();
    return graph().initializer(at::tensor(values).to(as.value_or(at::kDouble)), "numbers");
  }
  fail(std::string("reads a constant of type ") + example.tagKind() + ", which ONNX cannot hold as a tensor");
}

std::string OnnxOpContext::tensor(size_t i, std::optional<at::ScalarType> as) {
  const OnnxValue& value = input(i);
  if (!value.dynamic) return materialize(value, node_.inputs().at(i), as);
  if (value.name.empty()) fail("has argument " + std::to_string(i) + " that is a list; expected a tensor");
  return as ? cast(value.name, dtype(i), *as) : value.name;
}

std::string OnnxOpContext::derived(size_t i, const at::Tensor& derived, const std::string& suffix) {
  return graph().initializer(derived, onnx_ctx::ConstantHint(node_.inputs().at(i)) + suffix);
}

std::vector<std::string> OnnxOpContext::tensors(size_t i, std::optional<at::ScalarType> as) {
  const OnnxValue& value = input(i);
  std::vector<std::string> names;
  if (value.dynamic) {
    for (const OnnxValue& element : value.elements) {
      if (!element.dynamic) {
        names.push_back(materialize(element, nullptr, as));
        continue;
      }
      const at::ScalarType from = onnx_ctx::DtypeOfExample(element.example[0]);
      names.push_back(as ? cast(element.name, from, *as) : element.name);
    }
    return names;
  }
  if (!value.example[0].isTensorList()) fail("has argument " + std::to_string(i) + " that is not a list of tensors");
  for (const at::Tensor& tensor : value.example[0].toTensorVector()) {
    OnnxValue element;
    element.example = {tensor, tensor};
    names.push_back(materialize(element, nullptr, as));
  }
  return names;
}

std::string OnnxOpContext::integers_tensor(size_t i) {
  const OnnxValue& value = input(i);
  if (!value.dynamic) return graph().int64s(integers(i));
  if (!value.name.empty()) return cast(value.name, dtype(i), at::kLong);  // a tensor of sizes
  std::vector<std::string> pieces;
  for (const OnnxValue& element : value.elements) {
    if (!element.dynamic) {
      if (!element.example[0].isInt()) fail("has argument " + std::to_string(i) + " that is not a list of integers");
      pieces.push_back(graph().int64s({element.example[0].toInt()}));
    } else {
      const std::string number = cast(element.name, onnx_ctx::DtypeOfExample(element.example[0]), at::kLong);
      pieces.push_back(add("Unsqueeze", {number, graph().int64s({0})}));
    }
  }
  if (pieces.size() == 1) return pieces.front();
  return add("Concat", pieces, {OnnxIntAttribute("axis", 0)});
}

std::string OnnxOpContext::size_tensor(size_t i, int64_t d) {
  const std::vector<int64_t> known = sizes(i);
  if (known.at(d) >= 0) return graph().int64s({known[d]});
  const std::string shape = add("Shape", {tensor(i)});
  return add("Gather", {shape, graph().int64s({d})}, {OnnxIntAttribute("axis", 0)});
}

std::string OnnxOpContext::cast(const std::string& name, at::ScalarType from, at::ScalarType to) {
  if (from == to) return name;
  return add("Cast", {name}, {OnnxIntAttribute("to", OnnxElementType(to))});
}

std::string OnnxOpContext::add(const std::string& op_type, const std::vector<std::string>& inputs,
                               const std::vector<onnx::AttributeProto>& attributes) {
  return graph().add1(op_type, inputs, attributes, op_type);
}

std::vector<std::string> OnnxOpContext::add_n(const std::string& op_type, const std::vector<std::string>& inputs,
                                              int outputs, const std::vector<onnx::AttributeProto>& attributes) {
  return graph().add(op_type, inputs, outputs, attributes, op_type);
}

void OnnxOpContext::set(size_t o, const std::string& name) {
  OnnxValue& output = *outputs_.at(o);
  set_.at(o) = true;
  output.dynamic = true;
  output.name = name;
}

void OnnxOpContext::set_list(size_t o, const std::vector<std::string>& names) {
  OnnxValue& output = *outputs_.at(o);
  const c10::IValue& first = output.example[0];
  const c10::IValue& second = output.example[1];
  if (!first.isList() || first.toListRef().size() != names.size())
    fail("gives a list of another length than its mapping (an internal error)");
  set_.at(o) = true;
  output.dynamic = true;
  output.elements.clear();
  for (size_t j = 0; j < names.size(); ++j) {
    OnnxValue element;
    element.dynamic = !names[j].empty();
    element.name = names[j];
    element.example = {first.toListRef()[j], second.isList() ? second.toListRef().at(j) : first.toListRef()[j]};
    output.elements.push_back(std::move(element));
  }
}

void OnnxOpContext::set_value(size_t o, const OnnxValue& value) {
  OnnxValue& output = *outputs_.at(o);
  set_.at(o) = true;
  output.dynamic = value.dynamic;
  output.name = value.name;
  output.elements = value.elements;
}

void OnnxOpContext::set_elements(size_t o, std::vector<OnnxValue> elements) {
  OnnxValue& output = *outputs_.at(o);
  set_.at(o) = true;
  output.dynamic = true;
  output.name.clear();
  output.elements = std::move(elements);
}

bool OnnxOpContext::done() const { return std::find(set_.begin(), set_.end(), false) == set_.end(); }

void OnnxOpContext::fail(const std::string& why) const {
  EST_THROW(ModelError, "ONNX export: ", kind(), " ", why, " (the traced program's node `", onnx_ctx::NodeText(node_),
            "`); export without ExportOptions::onnx, or see docs/serving.md (ONNX) for the operators it maps");
}

const OnnxMappings& AllOnnxMappings() {
  static const OnnxMappings mappings = [] {
    OnnxMappings all;
    AddOnnxElementwiseMappings(all);
    AddOnnxTensorMappings(all);
    AddOnnxLayerMappings(all);
    return all;
  }();
  return mappings;
}

}  // namespace est
