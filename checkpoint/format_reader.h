#pragma once
/// What CheckpointReader needs of the reader of one index format: the manifest this
/// library wrote before (manifest_checkpoint_reader.h) or TensorFlow's tensor bundle
/// (bundle_checkpoint_reader.h). CheckpointReader checks names and dtypes before it calls
/// the methods that take a name.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace est::checkpoint {

/// One opened checkpoint of one format. Reads are safe from several threads.
class FormatReader {
 public:
  virtual ~FormatReader() = default;

  /// The global step the checkpoint records (0 when it records none).
  virtual int64_t global_step() const = 0;
  /// Names of the model's tensors (no blobs, no bookkeeping entries), sorted.
  virtual std::vector<std::string> tensor_names() const = 0;
  /// True when tensor_names() holds `name`.
  virtual bool has_tensor(const std::string& name) const = 0;
  /// The shape of an existing tensor.
  virtual std::vector<int64_t> shape(const std::string& name) const = 0;
  /// TensorFlow's DataType number of an existing tensor.
  virtual int data_type(const std::string& name) const = 0;
  /// Reads an existing tensor whose DataType ScalarTypeOf() knows; checks its CRC32C.
  virtual at::Tensor tensor(const std::string& name) const = 0;
  /// Reads the elements of an existing DT_STRING tensor; checks its CRC32C.
  virtual std::vector<std::string> strings(const std::string& name) const = 0;
  /// Names of all blobs, sorted.
  virtual std::vector<std::string> blob_names() const = 0;
  /// Reads one blob and checks its CRC32C; nullopt when absent.
  virtual std::optional<std::string> blob(const std::string& name) const = 0;
  /// Reads and checks every tensor and blob; throws the first CheckpointError.
  virtual void verify() const = 0;
};

}  // namespace est::checkpoint
