#pragma once

#include <ATen/core/Tensor.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace est {

/// The key under which a LibTorch optimizer's state map (`StateMap`, the type of
/// `Optimizer::state()`) keeps `parameter`'s state: the address of its TensorImpl, as text in
/// LibTorch 1.x and as the pointer itself since 2.0. Header-only, for code that links LibTorch.
template <typename StateMap>
typename StateMap::key_type OptimizerStateKey(const at::Tensor& parameter) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream text;  // as c10::guts::to_string writes it
    text << static_cast<const void*>(parameter.unsafeGetTensorImpl());
    return text.str();
  } else {
    return parameter.unsafeGetTensorImpl();
  }
}

}  // namespace est
