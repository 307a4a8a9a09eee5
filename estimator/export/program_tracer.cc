#include "estimator/export/program_tracer.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <cctype>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/quoted_text.h"
#include "estimator/export/exported_program.h"

namespace est {
namespace {

/// The program's class, under the `__torch__` namespace where TorchScript keeps its classes.
constexpr const char* kProgramClass = "__torch__.TorchEstimatorProgram";
/// Free sizes of the request traced, and of the requests (of other values) the program is checked on.
constexpr int64_t kTracedSize = 3;
constexpr int64_t kCheckedSizes[] = {1, 5, kTracedSize};

/// What the tracer cannot record, for the messages of a program that does not match.
constexpr const char* kTracingRules =
    "the tracer records the LibTorch operators of one run: a branch on a tensor's value, a size read in C++ "
    "(tensor.size(0)) passed back as a number (use -1 in view/reshape, or flatten), or work outside LibTorch's "
    "operators is fixed at what the traced run did. Export the weights alone with ExportOptions().weights_only(true)";

/// `name` as a Python identifier: other characters as '_', '_' before a leading digit.
std::string Identifier(const std::string& name) {
  std::string identifier = name.empty() ? "_" : name;
  for (char& c : identifier)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (std::isdigit(static_cast<unsigned char>(identifier[0]))) identifier.insert(0, "_");
  return identifier;
}

/// Where the program's outputs differ from model_fn's, or "".
std::string OutputDifference(const TensorMap& expected, const TensorMap& actual) {
  for (const auto& [name, want] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) return "output '" + name + "' is missing from the program's";
    const at::Tensor& got = it->second;
    std::ostringstream why;
    if (got.scalar_type() != want.scalar_type() || got.sizes() != want.sizes()) {
      why << "output '" << name << "' is " << got.scalar_type() << " " << got.sizes() << " from the program but "
          << want.scalar_type() << " " << want.sizes() << " from model_fn";
      return why.str();
    }
    const bool equal = at::isFloatingType(want.scalar_type())
                           ? at::allclose(got, want, /*rtol=*/1e-5, /*atol=*/1e-6, /*equal_nan=*/true)
                           : at::equal(got, want);
    if (!equal) {
      why << "output '" << name << "' differs from model_fn's";
      if (at::isFloatingType(want.scalar_type()))
        why << " (by up to " << (got - want).abs().nan_to_num(0).max().item<double>() << ")";
      return why.str();
    }
  }
  for (const auto& [name, tensor] : actual)
    if (expected.count(name) == 0) return "the program has output '" + name + "', which model_fn does not predict";
  return "";
}

}  // namespace

Features RandomRequest(const std::vector<TensorSpec>& inputs, int64_t free_size, at::Generator& generator) {
  Features request;
  for (const TensorSpec& input : inputs) {
    std::vector<int64_t> sizes = input.shape;
    for (int64_t& size : sizes)
      if (size < 0) size = free_size;
    const auto options = at::TensorOptions().dtype(input.dtype);
    if (at::isFloatingType(input.dtype))
      request[input.name] = at::randn(sizes, generator, options);
    else if (input.dtype == at::kBool)
      request[input.name] = at::randint(0, 2, sizes, generator, at::kLong).to(at::kBool);
    else
      request[input.name] = at::randint(0, 3, sizes, generator, options);
  }
  return request;
}

std::string TraceProgram(const std::vector<TensorSpec>& inputs, const NamedTensors& variables,
                         const std::function<TensorMap(const Features&)>& predict) {
  torch::jit::Module module{c10::QualifiedName(kProgramClass)};
  module.register_attribute("training", c10::BoolType::get(), false);
  std::set<std::string> attributes{"training", "forward"};
  for (const auto& [name, variable] : variables) {
    std::string attribute = Identifier(name);
    for (int suffix = 1; !attributes.insert(attribute).second; ++suffix)
      attribute = Identifier(name) + "_" + std::to_string(suffix);
    const bool parameter = variable.requires_grad();
    variable.requires_grad_(false);  // the program's outputs carry no autograd history
    module.register_parameter(attribute, variable, /*is_buffer=*/!parameter);
  }

  std::vector<std::string> argument_names;
  for (const TensorSpec& input : inputs) argument_names.push_back(Identifier(input.name));
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(/*seed_in=*/20241206);
  const Features traced_request = RandomRequest(inputs, kTracedSize, generator);
  torch::jit::Stack stack;
  for (const TensorSpec& input : inputs) stack.emplace_back(traced_request.at(input.name));
  std::shared_ptr<torch::jit::Graph> graph;
  try {
    auto traced = torch::jit::tracer::trace(
        std::move(stack),
        [&](torch::jit::Stack traced_inputs) -> torch::jit::Stack {
          Features request;
          for (size_t i = 0; i < inputs.size(); ++i) request[inputs[i].name] = traced_inputs.at(i).toTensor();
          c10::Dict<std::string, at::Tensor> outputs;
          for (const auto& [name, tensor] : predict(request)) outputs.insert(name, tensor);
          return {c10::IValue(outputs)};
        },
        [](const at::Tensor&) { return std::string(); }, /*strict=*/false, /*force_outplace=*/false, &module,
        argument_names);
    graph = traced.first->graph;
  } catch (const c10::Error& e) {
    if (torch::jit::tracer::isTracing()) torch::jit::tracer::abandon();
    EST_THROW(ModelError, "model_fn's predictions cannot be traced into a program: ",
              OneLine(e.what_without_backtrace()), "; ", kTracingRules);
  }
  torch::jit::EliminateDeadCode(graph);
  auto* forward = module._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*module.type()->name(), "forward"), graph);
  module.type()->addMethod(forward);
  std::ostringstream bytes;
  module.save(bytes);
  std::string program = bytes.str();

  // The program as a server loads it, on requests of other sizes and values than the traced one.
  std::vector<std::string> input_names;
  for (const TensorSpec& input : inputs) input_names.push_back(input.name);
  ExportedProgram loaded(program, input_names, "the traced program");
  for (int64_t size : kCheckedSizes) {
    const Features request = RandomRequest(inputs, size, generator);
    const TensorMap expected = predict(request);
    TensorMap actual;
    try {
      actual = loaded(request);
    } catch (const ModelError& e) {
      EST_THROW(ModelError, "model_fn traced into a program at batch size ", kTracedSize, " fails at batch size ",
                size, ": ", e.what(), "; ", kTracingRules);
    }
    const std::string difference = OutputDifference(expected, actual);
    EST_CHECK(difference.empty(), ModelError, "model_fn traced into a program at batch size ", kTracedSize,
              " does not compute what model_fn does at batch size ", size, ": ", difference, "; ", kTracingRules);
  }
  return program;
}

}  // namespace est
