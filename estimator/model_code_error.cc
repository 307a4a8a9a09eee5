#include "estimator/model_code_error.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <typeinfo>

#include "common/logging.h"
#include "common/quoted_text.h"

namespace est {
namespace {

void DescribeTensor(std::ostringstream& out, const at::Tensor& tensor) {
  if (!tensor.defined()) {
    out << "undefined";
    return;
  }
  out << tensor.scalar_type() << " " << tensor.sizes();
}

// "std::out_of_range" for the type of `error`.
std::string TypeName(const std::exception& error) {
  const char* mangled = typeid(error).name();
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> readable(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                             &std::free);
  return status == 0 && readable ? readable.get() : mangled;
}

// LibTorch's full message (with its backtrace) of the exception in flight, or "".
std::string LibTorchBacktrace() {
  try {
    throw;
  } catch (const c10::Error& error) {
    return error.what();
  } catch (...) {
    return "";
  }
}

}  // namespace

std::string DescribeBatch(const data::Element& batch) {
  std::ostringstream out;
  out << "{";
  const char* separator = "";
  for (const auto& [name, tensor] : batch.features) {
    out << separator << "'" << name << "': ";
    DescribeTensor(out, tensor);
    separator = ", ";
  }
  out << "}";
  if (batch.labels.defined()) {
    out << ", labels ";
    DescribeTensor(out, batch.labels);
  }
  return out.str();
}

std::string DescribeCurrentException() {
  try {
    throw;
  } catch (const c10::Error& error) {
    return OneLine(error.what_without_backtrace());
  } catch (const std::exception& error) {
    return OneLine(TypeName(error) + ": " + error.what());
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

void ThrowModelCodeError(const char* what, Mode mode, int64_t step, const data::Element& batch) {
  const std::string cause = DescribeCurrentException();
  if (const std::string backtrace = LibTorchBacktrace(); !backtrace.empty())
    Log().debug("{} failed at global step {} ({}); LibTorch's error: {}", what, step, ModeName(mode), backtrace);
  const char* no_labels = mode == Mode::kPredict && !batch.labels.defined()
                              ? " (labels are undefined in Mode::kPredict: return EstimatorSpec::Predict before "
                                "using them)"
                              : "";
  EST_THROW(ModelError, what, " failed at global step ", step, " (", ModeName(mode), ") on a batch of ",
            DescribeBatch(batch), no_labels, ": ", cause);
}

void ThrowInputCodeError(const std::string& where) {
  EST_THROW(DataError, where, " failed: ", DescribeCurrentException());
}

}  // namespace est
