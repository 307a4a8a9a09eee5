#pragma once
/// Writing one checkpoint as a TensorFlow tensor bundle (tf.train.load_checkpoint reads it):
/// `<prefix>.data-00000-of-00001` (every tensor's bytes, then every blob's), then
/// `<prefix>.index` (a LevelDB table of BundleEntryProto, tensor_bundle_index.h), each
/// atomically, so that a crash leaves either the complete checkpoint or no index for it.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace est::checkpoint {

/// Writes the checkpoint `<prefix>` with the tensors and named opaque blobs. Tensors may be
/// of any dtype that data_type.h lists, any shape and any device; they are copied to
/// contiguous CPU memory and stored in this order. Blobs become DT_STRING scalars under
/// `_est_blobs/<name>`. The step is the int64 scalar tensor `global_step`, as TensorFlow
/// stores it, unless `tensors` has one: then that one must be an integer scalar holding
/// `global_step`. Throws CheckpointError naming the prefix when a tensor name repeats, is
/// empty or starts with `_est_blobs/`, a tensor cannot be stored, or a file cannot be
/// written; then other checkpoints are untouched and `<prefix>` is either as it was or absent.
void WriteCheckpoint(const std::string& prefix,
                     const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                     const std::map<std::string, std::string>& blobs, int64_t global_step);

}  // namespace est::checkpoint
