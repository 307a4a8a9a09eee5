#pragma once
// Comparing two checkpoints value for value (their files differ in bytes between runs: the
// archives inside hold record names).

#include <ATen/ATen.h>

#include <string>

#include "checkpoint/checkpoint_reader.h"

namespace est::testing {

/// "" when checkpoints `a` and `b` (prefixes) hold the same global step, the same tensors,
/// each bit for bit equal, and the same input position; else their first difference.
inline std::string CheckpointDifference(const std::string& a, const std::string& b) {
  const est::checkpoint::CheckpointReader first(a);
  const est::checkpoint::CheckpointReader second(b);
  if (first.global_step() != second.global_step())
    return "global step " + std::to_string(first.global_step()) + " vs " + std::to_string(second.global_step());
  if (first.tensor_names() != second.tensor_names()) return "the tensors have other names";
  for (const std::string& name : first.tensor_names())
    if (!at::equal(first.tensor(name), second.tensor(name))) return "tensor '" + name + "' differs";
  if (first.blob("input_position") != second.blob("input_position")) return "the input positions differ";
  return "";
}

}  // namespace est::testing
