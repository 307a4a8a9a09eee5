#include "checkpoint/manifest_checkpoint_reader.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <unordered_map>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/data_file.h"
#include "checkpoint/data_type.h"
#include "checkpoint/index_codec.h"
#include "checkpoint/manifest.pb.h"
#include "common/crc32c.h"
#include "common/error.h"

namespace est::checkpoint {
namespace {

/// Number of bytes a tensor of this shape and dtype occupies, or nullopt on overflow or
/// a negative dimension.
std::optional<uint64_t> ManifestTensorBytes(const proto::TensorEntry& entry, at::ScalarType type) {
  uint64_t bytes = c10::elementSize(type);
  for (int64_t dim : entry.shape()) {
    if (dim < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes))
      return std::nullopt;
  }
  return bytes;
}

class ManifestCheckpointReader : public FormatReader {
 public:
  ManifestCheckpointReader(const std::string& prefix, const std::string& index_bytes)
      : index_path_(IndexPath(prefix)) {
    DecodeIndex(index_bytes, index_path_, manifest_);
    data_.emplace(DataPath(prefix));
    EST_CHECK(data_->size() == manifest_.data_size(), CheckpointError, "checkpoint data file '",
              data_->path(), "' has ", data_->size(), " bytes but its index '", index_path_,
              "' describes ", manifest_.data_size(),
              " (truncated, or overwritten by another checkpoint)");
    index_entries();
  }

  int64_t global_step() const override { return manifest_.global_step(); }

  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const auto& entry : manifest_.tensors()) names.push_back(entry.name());
    std::sort(names.begin(), names.end());
    return names;
  }

  bool has_tensor(const std::string& name) const override { return tensors_.count(name) > 0; }

  std::vector<int64_t> shape(const std::string& name) const override {
    const auto& shape = entry(name).shape();
    return {shape.begin(), shape.end()};
  }

  int data_type(const std::string& name) const override { return entry(name).dtype(); }

  at::Tensor tensor(const std::string& name) const override {
    const proto::TensorEntry& stored = entry(name);
    at::Tensor tensor =
        at::empty(shape(name), at::TensorOptions().dtype(*ScalarTypeOf(stored.dtype())));
    if (stored.size() == 0) return tensor;
    const std::string what = "tensor '" + name + "'";
    data_->read(stored.offset(), stored.size(), tensor.data_ptr(), what);
    data_->check_crc(stored.crc32c(), crc32c::Value(tensor.data_ptr(), stored.size()), what);
    return tensor;
  }

  std::vector<std::string> strings(const std::string& name) const override {
    EST_ASSERT(false, "manifest checkpoints hold no string tensors, asked for '", name, "'");
  }

  std::vector<std::string> blob_names() const override {
    std::vector<std::string> names;
    for (const auto& blob : manifest_.blobs()) names.push_back(blob.name());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::optional<std::string> blob(const std::string& name) const override {
    auto it = blobs_.find(name);
    if (it == blobs_.end()) return std::nullopt;
    const proto::BlobEntry& stored = manifest_.blobs(it->second);
    std::string bytes(stored.size(), '\0');
    const std::string what = "blob '" + name + "'";
    data_->read(stored.offset(), stored.size(), bytes.data(), what);
    data_->check_crc(stored.crc32c(), crc32c::Value(bytes), what);
    return bytes;
  }

  void verify() const override {
    for (const auto& stored : manifest_.tensors()) {
      const std::string what = "tensor '" + stored.name() + "'";
      data_->check_crc(stored.crc32c(), data_->checksum(stored.offset(), stored.size(), what), what);
    }
    for (const auto& stored : manifest_.blobs()) {
      const std::string what = "blob '" + stored.name() + "'";
      data_->check_crc(stored.crc32c(), data_->checksum(stored.offset(), stored.size(), what), what);
    }
  }

 private:
  const proto::TensorEntry& entry(const std::string& name) const {
    return manifest_.tensors(tensors_.at(name));
  }

  void index_entries() {
    for (int i = 0; i < manifest_.tensors_size(); ++i) {
      const proto::TensorEntry& stored = manifest_.tensors(i);
      EST_CHECK(tensors_.emplace(stored.name(), i).second, CheckpointError, "checkpoint index '",
                index_path_, "' lists tensor '", stored.name(), "' twice");
      const auto type = ScalarTypeOf(stored.dtype());
      EST_CHECK(type.has_value(), CheckpointError, "checkpoint index '", index_path_,
                "' gives tensor '", stored.name(), "' the unknown DataType ", stored.dtype());
      EST_CHECK(ManifestTensorBytes(stored, *type) == stored.size(), CheckpointError,
                "checkpoint index '", index_path_, "' gives tensor '", stored.name(), "' a size of ",
                stored.size(), " bytes, which does not match its shape and dtype");
      check_extent("tensor", stored.name(), stored.offset(), stored.size());
    }
    for (int i = 0; i < manifest_.blobs_size(); ++i) {
      const proto::BlobEntry& stored = manifest_.blobs(i);
      EST_CHECK(blobs_.emplace(stored.name(), i).second, CheckpointError, "checkpoint index '",
                index_path_, "' lists blob '", stored.name(), "' twice");
      check_extent("blob", stored.name(), stored.offset(), stored.size());
    }
  }

  void check_extent(const char* kind, const std::string& name, uint64_t offset, uint64_t size) const {
    EST_CHECK(data_->contains(offset, size), CheckpointError, "checkpoint index '", index_path_,
              "' places ", kind, " '", name, "' at bytes [", offset, ", +", size,
              ") beyond the end of the data file (", data_->size(), " bytes)");
  }

  std::string index_path_;
  proto::Manifest manifest_;
  std::optional<DataFile> data_;
  std::unordered_map<std::string, int> tensors_;
  std::unordered_map<std::string, int> blobs_;
};

}  // namespace

std::unique_ptr<FormatReader> OpenManifestCheckpoint(const std::string& prefix,
                                                     const std::string& index_bytes) {
  return std::make_unique<ManifestCheckpointReader>(prefix, index_bytes);
}

}  // namespace est::checkpoint
