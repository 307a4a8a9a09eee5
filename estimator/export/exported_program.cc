#include "estimator/export/exported_program.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/csrc/jit/serialization/import.h>

#include <sstream>

#include "common/error.h"
#include "common/quoted_text.h"

namespace est {
namespace {

/// The error of a program's operator: the last line of the interpreter's report, which quotes the
/// program's code before it; other errors on one line.
std::string ErrorOfProgram(const std::string& message) {
  if (message.find("Traceback of TorchScript") == std::string::npos) return OneLine(message);
  size_t end = message.find_last_not_of(" \n");
  if (end == std::string::npos) return OneLine(message);
  const size_t newline = message.rfind('\n', end);
  const size_t start = newline == std::string::npos ? 0 : newline + 1;
  return message.substr(start, end + 1 - start);
}

}  // namespace

struct ExportedProgram::Impl {
  torch::jit::Module module;
  /// The forward graph, compiled for the interpreter once: each call runs it as it is, without
  /// the graph executor's profiling runs and re-specialization per input shape.
  std::unique_ptr<torch::jit::Code> code;
  std::vector<std::string> input_names;
  std::string source;
};

ExportedProgram::ExportedProgram(const std::string& bytes, std::vector<std::string> input_names,
                                 const std::string& source, c10::Device device)
    : impl_(std::make_unique<Impl>()) {
  impl_->input_names = std::move(input_names);
  impl_->source = source;
  try {
    std::istringstream stream(bytes);
    impl_->module = torch::jit::load(stream, device);
  } catch (const c10::Error& e) {
    EST_THROW(CheckpointError, "'", source, "' cannot be loaded as a TorchScript program: ",
              OneLine(e.what_without_backtrace()));
  }
  const auto forward = impl_->module.find_method("forward");
  EST_CHECK(forward.has_value(), CheckpointError, "'", source, "' is a TorchScript module without a forward method");
  impl_->module.eval();
  try {
    std::shared_ptr<torch::jit::Graph> graph = forward->graph()->copy();
    torch::jit::Inline(*graph);
    EST_CHECK(graph->inputs().size() == impl_->input_names.size() + 1, CheckpointError, "'", source,
              "' has a forward of ", graph->inputs().size() - 1, " inputs; its export's signature has ",
              impl_->input_names.size());
    impl_->code = std::make_unique<torch::jit::Code>(graph, "forward");
  } catch (const c10::Error& e) {
    EST_THROW(CheckpointError, "'", source, "' has a forward that cannot run: ", OneLine(e.what_without_backtrace()));
  }
}

ExportedProgram::~ExportedProgram() = default;
ExportedProgram::ExportedProgram(ExportedProgram&&) noexcept = default;
ExportedProgram& ExportedProgram::operator=(ExportedProgram&&) noexcept = default;

TensorMap ExportedProgram::operator()(const Features& request) const {
  torch::jit::Stack stack;
  stack.reserve(impl_->input_names.size() + 1);
  stack.emplace_back(impl_->module._ivalue());
  for (const std::string& name : impl_->input_names) stack.emplace_back(request.at(name));
  c10::IValue result;
  try {
    torch::jit::InterpreterState(*impl_->code).run(stack);
    result = std::move(stack.back());
  } catch (const c10::Error& e) {
    EST_THROW(ModelError, "the program '", impl_->source, "' failed: ", ErrorOfProgram(e.what_without_backtrace()));
  } catch (const std::exception& e) {  // the interpreter's report of an operator's error
    EST_THROW(ModelError, "the program '", impl_->source, "' failed: ", ErrorOfProgram(e.what()));
  }
  EST_CHECK(result.isGenericDict(), ModelError, "the program '", impl_->source, "' returned a ", result.tagKind(),
            "; expected a dictionary of tensors by name");
  TensorMap outputs;
  for (const auto& item : result.toGenericDict()) {
    EST_CHECK(item.key().isString() && item.value().isTensor(), ModelError, "the program '", impl_->source,
              "' returned a dictionary with an entry that is not a name and a tensor");
    outputs.emplace(item.key().toStringRef(), item.value().toTensor());
  }
  return outputs;
}

}  // namespace est
