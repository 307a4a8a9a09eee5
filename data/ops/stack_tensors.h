#pragma once
/// Internal: how Dataset::batch joins the tensors of one key.

#include <ATen/core/Tensor.h>

#include <vector>

namespace est::data {

/// at::stack(tensors) along a new dim 0, for tensors already checked to be defined and of
/// equal shape, dtype and device. Plain contiguous CPU tensors (strided, no autograd, no
/// lazy conjugate or negative bit) are copied with memcpy into one output allocated once;
/// any other kind goes through at::stack, which gives the same values.
at::Tensor StackTensors(const std::vector<at::Tensor>& tensors);

/// Stacks `tensors` (checked to be defined and of one rank, dtype and device) into
/// [n, largest...], each padded at the end of every dimension with zeros. Plain contiguous CPU
/// tensors that differ in their first dimension alone (a VarLen feature's values) are copied
/// with memcpy, each into its row's start; others go through a copy per tensor.
at::Tensor StackPaddedTensors(const std::vector<at::Tensor>& tensors, const std::vector<int64_t>& largest);

}  // namespace est::data
