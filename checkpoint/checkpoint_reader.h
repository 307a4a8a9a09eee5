#pragma once
/// Reading and verifying a checkpoint: a TensorFlow tensor bundle, written by WriteCheckpoint
/// or by TensorFlow itself, or a checkpoint of the format this library wrote before.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace est::checkpoint {

/// Reads the tensors and blobs of the checkpoint `<prefix>`, checking every read against
/// the CRC32C in its index. Holds the data files open, so a checkpoint that retention
/// deletes while it is being read stays readable. Reads are safe from several threads.
class CheckpointReader {
 public:
  /// Opens `<prefix>.index` (either format, told apart by the table magic that ends a
  /// bundle's index) and checks it against the data files' sizes; throws CheckpointError
  /// naming the file when one is missing, truncated or unparsable, or when any entry lies
  /// outside its data file.
  explicit CheckpointReader(const std::string& prefix);
  ~CheckpointReader();
  CheckpointReader(CheckpointReader&&) noexcept;
  CheckpointReader& operator=(CheckpointReader&&) noexcept;

  /// The prefix this reader was opened with.
  const std::string& prefix() const;
  /// The global step recorded when the checkpoint was written: in a bundle, its integer
  /// scalar tensor `global_step` (0 when it has none; CheckpointError as tensor() when the
  /// bytes fail their check).
  int64_t global_step() const;

  /// Names of all tensors, sorted (as tf.train.list_variables lists them); neither blobs
  /// nor a bundle's bookkeeping entries. In a bundle, `global_step` is one of them.
  std::vector<std::string> tensor_names() const;
  /// True when the checkpoint holds a tensor of this name.
  bool has_tensor(const std::string& name) const;
  /// The shape of a tensor; CheckpointError when absent (as tensor()).
  std::vector<int64_t> shape(const std::string& name) const;
  /// The dtype of a tensor; CheckpointError when absent (as tensor()) or when it holds a
  /// type LibTorch has no dtype for (strings: read them with string_tensor()).
  at::ScalarType dtype(const std::string& name) const;
  /// Reads one tensor into new CPU memory and checks its CRC32C. Throws CheckpointError
  /// naming the data file and the tensor on a mismatch or short read, and naming the
  /// tensor and a few available names when the checkpoint has no such tensor, or naming the
  /// tensor when it holds strings, a type data_type.h does not list, or only the slices of
  /// a TensorFlow partitioned variable.
  at::Tensor tensor(const std::string& name) const;
  /// Reads the elements of a string tensor (TensorFlow's DT_STRING), row-major, and checks
  /// them; CheckpointError as tensor(), or when the tensor does not hold strings.
  std::vector<std::string> string_tensor(const std::string& name) const;

  /// Names of all blobs, sorted.
  std::vector<std::string> blob_names() const;
  /// Reads one blob and checks its CRC32C (CheckpointError as tensor()); nullopt when absent.
  std::optional<std::string> blob(const std::string& name) const;

  /// Reads and checks every tensor and blob; throws the first CheckpointError.
  void verify() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace est::checkpoint
