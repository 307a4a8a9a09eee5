#include "data/element.h"

#include <stdexcept>

namespace est {
namespace {

[[noreturn]] void ThrowMissingFeature(const std::string& name, const Features& features) {
  std::string message = "no feature '" + name + "'; ";
  if (features.empty()) {
    message += "this element has no features";
  } else {
    message += "this element has ";
    const char* separator = "";
    for (const auto& [present, tensor] : features) {
      message += separator + ("'" + present + "'");
      separator = ", ";
    }
  }
  throw std::out_of_range(message);
}

}  // namespace

at::Tensor& Features::at(const std::string& name) {
  const auto found = find(name);
  if (found == end()) ThrowMissingFeature(name, *this);
  return found->second;
}

const at::Tensor& Features::at(const std::string& name) const {
  const auto found = find(name);
  if (found == end()) ThrowMissingFeature(name, *this);
  return found->second;
}

}  // namespace est
