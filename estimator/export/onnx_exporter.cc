#include "estimator/export/onnx_exporter.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/serialization/import.h>

#include <array>
#include <sstream>
#include <unordered_map>

#include "common/config.h"
#include "common/error.h"
#include "common/quoted_text.h"
#include "estimator/export/export_manifest.h"
#include "estimator/export/onnx_graph.h"
#include "estimator/export/onnx_op_context.h"
#include "estimator/export/program_tracer.h"

namespace est {
namespace onnx_exporter {
namespace {

/// The IR version written: ONNX 1.12's, which reads opsets up to 17.
constexpr int64_t kIrVersion = 8;
/// Free sizes of the two requests the program is run on to tell fixed sizes from the request's.
constexpr int64_t kProbeSizes[2] = {2, 5};
/// Operators that read a tensor's sizes or type, not its values: constants where the probe runs agree.
const char* const kShapeQueries[] = {"aten::size", "aten::dim", "aten::numel", "prim::dtype", "prim::device",
                                     "prim::layout", "aten::is_floating_point"};

/// A request of `inputs` with free sizes `free_size` (RandomRequest's), as the program's arguments.
std::vector<c10::IValue> ProbeRequest(const std::vector<TensorSpec>& inputs, int64_t free_size,
                                      at::Generator& generator) {
  Features request = RandomRequest(inputs, free_size, generator);
  std::vector<c10::IValue> arguments;
  for (const TensorSpec& input : inputs) arguments.emplace_back(std::move(request.at(input.name)));
  return arguments;
}

/// The ValueInfo of a graph input or output of `spec`; a free size is a named dimension.
onnx::ValueInfoProto ValueInfo(const TensorSpec& spec) {
  onnx::ValueInfoProto info;
  info.set_name(spec.name);
  onnx::TypeProto::Tensor* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(OnnxElementType(spec.dtype));
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
    if (spec.shape[d] >= 0)
      dim->set_dim_value(spec.shape[d]);
    else
      dim->set_dim_param(d == 0 ? "batch" : spec.name + "_" + std::to_string(d));
  }
  return info;
}

/// Converts the program's nodes one by one, running each on both probe requests.
class Converter {
 public:
  explicit Converter(OnnxExportState& state) : state_(state) {}

  /// `value` is the program's input `spec`, holding `examples`.
  void input(const torch::jit::Value* value, const TensorSpec& spec, std::array<c10::IValue, 2> examples) {
    OnnxValue& held = values_[value];
    held.dynamic = true;
    held.name = spec.name;
    held.example = std::move(examples);
  }

  /// `value` is the constant `example` (the program's self).
  void constant(const torch::jit::Value* value, const c10::IValue& example) {
    values_[value].example = {example, example};
  }

  /// Converts `node`.
  void convert(const torch::jit::Node& node) {
    std::vector<const OnnxValue*> inputs;
    bool reads_request = false;
    for (const torch::jit::Value* value : node.inputs()) {
      auto it = values_.find(value);
      EST_ASSERT(it != values_.end(), "the program's value %", value->debugName(), " is used before it is made");
      inputs.push_back(&it->second);
      reads_request = reads_request || it->second.dynamic;
    }
    std::array<std::vector<c10::IValue>, 2> results;
    for (size_t run = 0; run < 2; ++run) results[run] = evaluate(node, inputs, run);
    std::vector<OnnxValue*> outputs;
    for (size_t o = 0; o < node.outputs().size(); ++o) {
      OnnxValue& output = values_[node.outputs()[o]];
      output.example = {results[0].at(o), results[1].at(o)};
      outputs.push_back(&output);
    }
    OnnxOpContext context(node, inputs, outputs, state_);
    if (!reads_request || fixed_query(node, results)) {
      check_deterministic(context, results);
      return;
    }
    check_not_aliased(context, node);
    const OnnxMappings& mappings = AllOnnxMappings();
    auto mapping = mappings.find(context.kind());
    if (mapping == mappings.end()) context.fail("has no ONNX mapping at opset " + std::to_string(state_.opset));
    mapping->second(context);
    EST_ASSERT(context.done(), "the ONNX mapping of ", context.kind(), " left an output unset");
  }

  /// The value `value` holds.
  const OnnxValue& value(const torch::jit::Value* value) const { return values_.at(value); }

 private:
  /// `node`'s outputs in probe run `run`.
  std::vector<c10::IValue> evaluate(const torch::jit::Node& node, const std::vector<const OnnxValue*>& inputs,
                                    size_t run) {
    const torch::jit::Symbol kind = node.kind();
    if (kind == c10::prim::Constant) return {torch::jit::toIValue(node.output()).value()};
    if (kind == c10::prim::GetAttr)
      return {inputs.at(0)->example[run].toObject()->getAttr(node.s(c10::attr::name))};
    if (kind == c10::prim::ListConstruct) {
      c10::impl::GenericList list(node.output()->type()->expectRef<c10::ListType>().getElementType());
      for (const OnnxValue* input : inputs) list.push_back(input->example[run]);
      return {c10::IValue(list)};
    }
    if (kind == c10::prim::TupleConstruct) {
      std::vector<c10::IValue> elements;
      for (const OnnxValue* input : inputs) elements.push_back(input->example[run]);
      return {c10::ivalue::Tuple::create(std::move(elements))};
    }
    if (kind == c10::prim::ListUnpack) {
      const auto elements = inputs.at(0)->example[run].toListRef();
      return std::vector<c10::IValue>(elements.begin(), elements.end());
    }
    if (kind == c10::prim::TupleUnpack) {
      const auto& elements = inputs.at(0)->example[run].toTupleRef().elements();
      return std::vector<c10::IValue>(elements.begin(), elements.end());
    }
    torch::jit::Stack stack;
    for (const OnnxValue* input : inputs) stack.push_back(input->example[run]);
    try {
      node.getOperation()(stack);
    } catch (const c10::Error& e) {
      EST_THROW(ModelError, "ONNX export: the traced program's ", kind.toQualString(), " cannot be run on a request "
                "of free size ", kProbeSizes[run], ": ", OneLine(e.what_without_backtrace()));
    }
    EST_ASSERT(stack.size() == node.outputs().size(), kind.toQualString(), " gave ", stack.size(),
               " values; its node has ", node.outputs().size(), " outputs");
    return stack;
  }

  /// `node` reads only sizes or types of the request that both probe runs found the same.
  static bool fixed_query(const torch::jit::Node& node, const std::array<std::vector<c10::IValue>, 2>& results) {
    const std::string kind = node.kind().toQualString();
    if (std::find(std::begin(kShapeQueries), std::end(kShapeQueries), kind) == std::end(kShapeQueries)) return false;
    for (size_t o = 0; o < results[0].size(); ++o) {
      const c10::IValue& first = results[0][o];
      const c10::IValue& second = results[1][o];
      if (first.isInt() && (!second.isInt() || first.toInt() != second.toInt())) return false;
      if (first.isIntList() && (!second.isIntList() || first.toIntVector() != second.toIntVector())) return false;
    }
    return true;
  }

  /// A node computed here must give the same values on both runs: a random operator does not.
  static void check_deterministic(const OnnxOpContext& context,
                                  const std::array<std::vector<c10::IValue>, 2>& results) {
    for (size_t o = 0; o < results[0].size(); ++o) {
      const c10::IValue& first = results[0][o];
      const c10::IValue& second = results[1][o];
      if (!first.isTensor() || !second.isTensor()) continue;
      const at::Tensor& a = first.toTensor();
      const at::Tensor& b = second.toTensor();
      const bool same = a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
                        (a.is_floating_point() ? at::allclose(a, b, 0, 0, /*equal_nan=*/true) : at::equal(a, b));
      if (!same)
        context.fail("reads nothing of the request but gives other values on each run (a random operator?), so "
                     "it cannot be written as a constant");
    }
  }

  /// An in-place operator is written as its out-of-place twin, which is what it computes only
  /// where nothing reads the tensor it changed afterwards.
  static void check_not_aliased(const OnnxOpContext& context, const torch::jit::Node& node) {
    const std::string kind = context.kind();
    if (kind.size() < 2 || kind.back() != '_' || kind[kind.size() - 2] == '_' || node.inputs().empty()) return;
    for (const torch::jit::Use& use : node.inputs()[0]->uses())
      if (use.user != &node && use.user->isAfter(&node))
        context.fail("changes a tensor in place that a later node reads; ONNX has no in-place operators");
  }

  OnnxExportState& state_;
  std::unordered_map<const torch::jit::Value*, OnnxValue> values_;
};

}  // namespace
}  // namespace onnx_exporter

void CheckOnnxOpset(int64_t opset, const std::string& option) {
  EST_CHECK(opset >= kOnnxMinOpset && opset <= kOnnxMaxOpset, ConfigError, option, " is ", opset,
            "; the ONNX export writes opsets ", kOnnxMinOpset, " to ", kOnnxMaxOpset);
}

std::string ExportOnnx(const std::string& program, const std::vector<TensorSpec>& inputs,
                       const std::vector<TensorSpec>& outputs, int64_t opset) {
  using namespace onnx_exporter;
  CheckOnnxOpset(opset, "the ONNX opset");
  std::istringstream stream(program);
  torch::jit::Module module = torch::jit::load(stream, c10::Device(c10::kCPU));
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  EST_ASSERT(graph->inputs().size() == inputs.size() + 1, "the traced program takes ", graph->inputs().size() - 1,
             " inputs; its signature has ", inputs.size());

  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  onnx::OperatorSetIdProto* operators = model.add_opset_import();
  operators->set_domain("");
  operators->set_version(opset);
  model.set_producer_name("TorchEstimator");
  model.set_producer_version(EST_VERSION);
  model.set_doc_string("model_fn's predictions (Mode::kPredict), traced by TorchEstimator's export");
  onnx::GraphProto* onnx_graph = model.mutable_graph();
  onnx_graph->set_name("TorchEstimatorProgram");
  OnnxGraph builder(onnx_graph);
  for (const TensorSpec& spec : inputs) builder.reserve(spec.name);
  for (const TensorSpec& spec : outputs) builder.reserve(spec.name);
  OnnxExportState state(builder, opset);
  Converter converter(state);

  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(/*seed_in=*/20250101);
  const std::vector<c10::IValue> first = ProbeRequest(inputs, kProbeSizes[0], generator);
  const std::vector<c10::IValue> second = ProbeRequest(inputs, kProbeSizes[1], generator);
  converter.constant(graph->inputs()[0], module._ivalue());
  for (size_t i = 0; i < inputs.size(); ++i) {
    converter.input(graph->inputs()[i + 1], inputs[i], {first[i], second[i]});
    *onnx_graph->add_input() = ValueInfo(inputs[i]);
  }

  const torch::jit::Node* returned = graph->outputs().at(0)->node();
  EST_ASSERT(returned->kind() == c10::prim::DictConstruct, "the traced program returns ",
             returned->kind().toQualString(), "; expected a dictionary of its outputs");
  for (const torch::jit::Node* node : graph->nodes())
    if (node != returned) converter.convert(*node);

  // Each output, by its name in the dictionary, through an Identity to the output's own name.
  std::map<std::string, const torch::jit::Value*> returned_values;
  for (size_t i = 0; i + 1 < returned->inputs().size(); i += 2)
    returned_values[torch::jit::toIValue(returned->inputs()[i]).value().toStringRef()] = returned->inputs()[i + 1];
  for (const TensorSpec& spec : outputs) {
    auto it = returned_values.find(spec.name);
    EST_CHECK(it != returned_values.end(), ModelError, "ONNX export: the traced program has no output '", spec.name,
              "'; it returns ", returned_values.size(), " outputs");
    const OnnxValue& value = converter.value(it->second);
    const at::Tensor example = value.example[0].toTensor();
    EST_CHECK(example.scalar_type() == spec.dtype, ModelError, "ONNX export: output '", spec.name, "' is ",
              example.scalar_type(), " in the traced program; its signature says ", DtypeName(spec.dtype));
    const std::string source = value.dynamic ? value.name : builder.initializer(example, spec.name + "_constant");
    builder.add_to("Identity", {source}, spec.name);
    *onnx_graph->add_output() = ValueInfo(spec);
  }
  std::string bytes;
  const bool serialized = model.SerializeToString(&bytes);
  EST_ASSERT(serialized, "the ONNX model cannot be serialized");
  return bytes;
}

}  // namespace est
