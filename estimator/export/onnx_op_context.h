#pragma once
/// OnnxOpContext: what the mapping of one node of a traced program to ONNX nodes sees — its
/// inputs (computed by ONNX, or constants), their dtypes and sizes as two probe runs of the
/// program found them, the graph it appends to — and how it names its outputs. Internal to the
/// ONNX export (onnx_exporter.h).

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimator/export/onnx_graph.h"

namespace est {

/// A value of the traced program as the ONNX export holds it.
struct OnnxValue {
  /// It depends on the request, so the ONNX graph computes it; otherwise it is example[0].
  bool dynamic = false;
  /// The ONNX value holding a dynamic tensor, or a dynamic number as a 0-d tensor.
  std::string name;
  /// A dynamic list's or tuple's elements.
  std::vector<OnnxValue> elements;
  /// Its value in the two probe runs of the program, on requests of different free sizes.
  std::array<c10::IValue, 2> example;
};

/// What every node's mapping shares: the graph, the opset, and constants already written.
struct OnnxExportState {
  OnnxExportState(OnnxGraph& graph, int64_t opset) : graph(graph), opset(opset) {}
  OnnxGraph& graph;
  int64_t opset;
  /// Initializers of the program's constant values, by value and dtype.
  std::map<std::pair<const torch::jit::Value*, int>, std::string> constants;
};

/// One node's mapping in progress.
class OnnxOpContext {
 public:
  OnnxOpContext(const torch::jit::Node& node, std::vector<const OnnxValue*> inputs, std::vector<OnnxValue*> outputs,
                OnnxExportState& state)
      : node_(node), inputs_(std::move(inputs)), outputs_(std::move(outputs)), state_(state), set_(outputs_.size()) {}

  /// The node's kind ("aten::linear") and the opset written.
  std::string kind() const { return node_.kind().toQualString(); }
  int64_t opset() const { return state_.opset; }
  OnnxGraph& graph() { return state_.graph; }

  /// The node's inputs.
  size_t inputs() const { return inputs_.size(); }
  const OnnxValue& input(size_t i) const { return *inputs_.at(i); }
  bool dynamic(size_t i) const { return input(i).dynamic; }
  /// Input `i` is a number (int, float or bool), not a tensor.
  bool numeric(size_t i) const;
  /// Input `i` is None (an optional argument left out).
  bool none(size_t i) const { return !dynamic(i) && input(i).example[0].isNone(); }

  /// Constant inputs; fail() where input `i` depends on the request or is of another type.
  int64_t integer(size_t i) const;
  double number(size_t i) const;
  bool boolean(size_t i) const;
  std::vector<int64_t> integers(size_t i) const;
  std::string text(size_t i) const;
  at::Tensor constant(size_t i) const;

  /// Input `i`'s dtype (a number's: int64, float64 or bool), rank and sizes (-1 where the two
  /// probe runs differ: a size the request decides).
  at::ScalarType dtype(size_t i) const;
  int64_t rank(size_t i) const;
  std::vector<int64_t> sizes(size_t i) const;
  /// The same of output `o`.
  at::ScalarType output_dtype(size_t o = 0) const;
  int64_t output_rank(size_t o = 0) const;
  std::vector<int64_t> output_sizes(size_t o = 0) const;
  /// `d` (negative from the end) as a dimension of a tensor of `rank`; fail() when out of range.
  int64_t axis(int64_t d, int64_t rank) const;

  /// The ONNX value of input `i` as a tensor, cast to `as` where given: a dynamic one's name, a
  /// constant as an initializer (numbers 0-d, lists of numbers 1-d).
  std::string tensor(size_t i, std::optional<at::ScalarType> as = std::nullopt);
  /// An initializer holding `derived` (a constant computed from input `i`, such as a weight
  /// transposed), named after input `i` with `suffix`.
  std::string derived(size_t i, const at::Tensor& derived, const std::string& suffix);
  /// The tensors of list input `i`.
  std::vector<std::string> tensors(size_t i, std::optional<at::ScalarType> as = std::nullopt);
  /// List-of-integers input `i` (sizes, as aten::view takes them) as a 1-d int64 tensor.
  std::string integers_tensor(size_t i);
  /// The size `d` of input `i` as a 1-d int64 tensor of one element.
  std::string size_tensor(size_t i, int64_t d);
  /// `name`, of dtype `from`, cast to `to` (itself where they are the same).
  std::string cast(const std::string& name, at::ScalarType from, at::ScalarType to);

  /// Appends a node writing one new value; returns its name.
  std::string add(const std::string& op_type, const std::vector<std::string>& inputs,
                  const std::vector<onnx::AttributeProto>& attributes = {});
  /// Appends a node writing `outputs` new values.
  std::vector<std::string> add_n(const std::string& op_type, const std::vector<std::string>& inputs, int outputs,
                                 const std::vector<onnx::AttributeProto>& attributes = {});

  /// Output `o` is the ONNX value `name`.
  void set(size_t o, const std::string& name);
  /// Output `o`, a list, holds the ONNX values `names` ("" for an element its example holds: a
  /// constant).
  void set_list(size_t o, const std::vector<std::string>& names);
  /// Output `o` is `value` (an element of a list, or an input: an identity).
  void set_value(size_t o, const OnnxValue& value);
  /// Output `o` is input `i`'s value.
  void set_input(size_t o, size_t i) { set_value(o, input(i)); }
  /// Output `o`, a list or tuple, holds `elements`.
  void set_elements(size_t o, std::vector<OnnxValue> elements);
  /// Every output was set.
  bool done() const;

  /// ModelError: this node cannot be mapped, `why` ("has no ONNX mapping at opset 17"), naming the
  /// op and the node.
  [[noreturn]] void fail(const std::string& why) const;

 private:
  const c10::IValue& example(size_t i) const;
  std::string materialize(const OnnxValue& value, const torch::jit::Value* source, std::optional<at::ScalarType> as);

  const torch::jit::Node& node_;
  std::vector<const OnnxValue*> inputs_;
  std::vector<OnnxValue*> outputs_;
  OnnxExportState& state_;
  std::vector<bool> set_;  ///< which outputs the mapping set
};

/// A node kind's mapping to ONNX nodes.
using OnnxMapping = std::function<void(OnnxOpContext&)>;
/// Mappings by node kind ("aten::relu").
using OnnxMappings = std::map<std::string, OnnxMapping>;

/// Every mapping the export knows.
const OnnxMappings& AllOnnxMappings();
/// Elementwise arithmetic, comparisons, activations, casts and identities (onnx_ops_elementwise.cc).
void AddOnnxElementwiseMappings(OnnxMappings& mappings);
/// Shapes, views, indexing, joins and splits, reductions, lists and numbers (onnx_ops_tensor.cc).
void AddOnnxTensorMappings(OnnxMappings& mappings);
/// Layers: matrix products, convolution, pooling, normalization, softmax (onnx_ops_layers.cc).
void AddOnnxLayerMappings(OnnxMappings& mappings);

}  // namespace est
