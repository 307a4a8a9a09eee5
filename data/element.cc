#include "data/element.h"

#include <stdexcept>
#include <vector>

#include "common/quoted_text.h"

namespace est {
namespace {

[[noreturn]] void ThrowMissingFeature(const std::string& name, const Features& features) {
  std::vector<std::string> present;
  for (const auto& entry : features) present.push_back(entry.first);
  throw std::out_of_range("no feature " + QuotedText(name) + "; this element has " +
                          (present.empty() ? std::string("no features") : QuotedList(present)));
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
