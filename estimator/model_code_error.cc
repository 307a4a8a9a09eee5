#include "estimator/model_code_error.h"

#include <ATen/core/Tensor.h>

#include <sstream>

#include "common/error.h"
#include "common/logging.h"

namespace est {
namespace {

void DescribeTensor(std::ostringstream& out, const at::Tensor& tensor) {
  if (!tensor.defined()) {
    out << "undefined";
    return;
  }
  out << tensor.scalar_type() << " " << tensor.sizes();
}

// The message without LibTorch's backtrace, on one line.
std::string OneLine(const c10::Error& error) {
  std::string text = error.what_without_backtrace();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at)) text.replace(at, 1, "; ");
  return text;
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

void ThrowModelCodeError(const char* what, Mode mode, int64_t step, const data::Element& batch,
                         const c10::Error& error) {
  Log().debug("{} failed at global step {} ({}); LibTorch's error: {}", what, step, ModeName(mode), error.what());
  EST_THROW(ModelError, what, " failed at global step ", step, " (mode ", ModeName(mode), ") on a batch of ",
            DescribeBatch(batch), ": ", OneLine(error));
}

}  // namespace est
