#include "checkpoint/bundle_checkpoint_reader.h"

#include <ATen/ops/empty.h>

#include <map>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/data_file.h"
#include "checkpoint/data_type.h"
#include "checkpoint/string_tensor.h"
#include "checkpoint/tensor_bundle_index.h"
#include "common/crc32c.h"
#include "common/error.h"

namespace est::checkpoint {
namespace {

/// TensorFlow stores the slices of a partitioned variable under keys that begin with this
/// byte (an encoded slice spec); they are no model tensors of their own.
constexpr char kSliceKeyStart = '\0';
/// Bytes of the checksum of a string tensor's lengths.
constexpr uint64_t kLengthsChecksumBytes = 4;

/// One entry of the bundle with its shape, checked against the data files.
struct BundleTensor {
  proto::BundleEntryProto entry;
  std::vector<int64_t> shape;
  uint64_t elements = 1;
};

/// Elements of a shape, or nullopt on overflow, a negative or an unknown dimension.
std::optional<uint64_t> ElementCount(const proto::TensorShapeProto& shape) {
  if (shape.unknown_rank()) return std::nullopt;
  uint64_t count = 1;
  for (const auto& dim : shape.dim()) {
    if (dim.size() < 0 || __builtin_mul_overflow(count, static_cast<uint64_t>(dim.size()), &count))
      return std::nullopt;
  }
  return count;
}

class BundleCheckpointReader : public FormatReader {
 public:
  BundleCheckpointReader(const std::string& prefix, const std::string& index_bytes)
      : index_path_(IndexPath(prefix)) {
    TensorBundleIndex index = DecodeBundleIndex(index_bytes, index_path_);
    const int num_shards = index.header.num_shards();
    for (int shard = 0; shard < num_shards; ++shard)
      data_.emplace_back(DataPath(prefix, shard, num_shards));
    for (auto& [key, entry] : index.entries) {
      if (key.rfind(kBlobKeyPrefix, 0) == 0) {
        const std::string name = key.substr(sizeof(kBlobKeyPrefix) - 1);
        EST_CHECK(entry.dtype() == proto::DT_STRING && entry.shape().dim_size() == 0 &&
                      !entry.shape().unknown_rank(),
                  CheckpointError, "checkpoint index '", index_path_, "' stores blob '", name,
                  "' as something other than a string scalar (DT_STRING, shape [])");
        blobs_.emplace(name, check_entry("blob", name, std::move(entry)));
      } else {
        BundleTensor tensor = check_entry("tensor", key, std::move(entry));
        if (key.empty() || key.front() != kSliceKeyStart) tensors_.emplace(key, std::move(tensor));
      }
    }
  }

  int64_t global_step() const override {
    auto it = tensors_.find(kGlobalStepTensorName);
    if (it == tensors_.end() || !it->second.shape.empty() || it->second.entry.slices_size() > 0)
      return 0;
    const int type = it->second.entry.dtype();
    if (type != proto::DT_INT64 && type != proto::DT_INT32) return 0;
    return tensor(kGlobalStepTensorName).item<int64_t>();
  }

  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const auto& [name, tensor] : tensors_) names.push_back(name);
    return names;
  }

  bool has_tensor(const std::string& name) const override { return tensors_.count(name) > 0; }

  std::vector<int64_t> shape(const std::string& name) const override {
    return tensors_.at(name).shape;
  }

  int data_type(const std::string& name) const override { return tensors_.at(name).entry.dtype(); }

  at::Tensor tensor(const std::string& name) const override {
    const BundleTensor& stored = whole_tensor(name);
    const auto& entry = stored.entry;
    at::Tensor tensor = at::empty(stored.shape, at::TensorOptions().dtype(*ScalarTypeOf(entry.dtype())));
    const DataFile& data = data_[static_cast<size_t>(entry.shard_id())];
    const std::string what = "tensor '" + name + "'";
    data.read(static_cast<uint64_t>(entry.offset()), static_cast<uint64_t>(entry.size()),
              tensor.data_ptr(), what);
    data.check_crc(crc32c::Unmask(entry.crc32c()),
                   crc32c::Value(tensor.data_ptr(), static_cast<size_t>(entry.size())), what);
    return tensor;
  }

  std::vector<std::string> strings(const std::string& name) const override {
    return read_strings(whole_tensor(name), "tensor '" + name + "'");
  }

  std::vector<std::string> blob_names() const override {
    std::vector<std::string> names;
    for (const auto& [name, blob] : blobs_) names.push_back(name);
    return names;
  }

  std::optional<std::string> blob(const std::string& name) const override {
    auto it = blobs_.find(name);
    if (it == blobs_.end()) return std::nullopt;
    return std::move(read_strings(it->second, "blob '" + name + "'").front());
  }

  void verify() const override {
    for (const auto& [name, stored] : tensors_) {
      if (stored.entry.slices_size() > 0) continue;  // its slices are checked as entries below
      const std::string what = "tensor '" + name + "'";
      if (stored.entry.dtype() == proto::DT_STRING) {
        read_strings(stored, what);
      } else {
        const auto& entry = stored.entry;
        const DataFile& data = data_[static_cast<size_t>(entry.shard_id())];
        data.check_crc(crc32c::Unmask(entry.crc32c()),
                       data.checksum(static_cast<uint64_t>(entry.offset()),
                                     static_cast<uint64_t>(entry.size()), what),
                       what);
      }
    }
    for (const auto& [name, stored] : blobs_) read_strings(stored, "blob '" + name + "'");
  }

 private:
  /// Checks an entry of the index against its shape and data file.
  BundleTensor check_entry(const char* kind, const std::string& key, proto::BundleEntryProto entry) const {
    const std::string where = std::string("checkpoint index '") + index_path_ + "' gives " + kind +
                              " '" + key + "'";
    const auto elements = ElementCount(entry.shape());
    EST_CHECK(elements.has_value(), CheckpointError, where, " a shape with an unknown or negative dimension");
    EST_CHECK(entry.shard_id() >= 0 && static_cast<size_t>(entry.shard_id()) < data_.size(),
              CheckpointError, where, " the data file number ", entry.shard_id(), "; the bundle has ",
              data_.size());
    EST_CHECK(entry.offset() >= 0 && entry.size() >= 0, CheckpointError, where,
              " a negative offset or size");
    const auto size = static_cast<uint64_t>(entry.size());
    const DataFile& data = data_[static_cast<size_t>(entry.shard_id())];
    EST_CHECK(data.contains(static_cast<uint64_t>(entry.offset()), size), CheckpointError,
              "checkpoint index '", index_path_, "' places ", kind, " '", key, "' at bytes [",
              entry.offset(), ", +", size, ") beyond the end of the data file '", data.path(),
              "' (", data.size(), " bytes): it is truncated, or overwritten by another checkpoint");
    if (entry.slices_size() == 0) check_size(where, entry, *elements);
    BundleTensor tensor;
    tensor.shape.reserve(static_cast<size_t>(entry.shape().dim_size()));
    for (const auto& dim : entry.shape().dim()) tensor.shape.push_back(dim.size());
    tensor.elements = *elements;
    tensor.entry = std::move(entry);
    return tensor;
  }

  static void check_size(const std::string& where, const proto::BundleEntryProto& entry,
                         uint64_t elements) {
    const auto size = static_cast<uint64_t>(entry.size());
    if (entry.dtype() == proto::DT_STRING) {
      EST_CHECK(size >= elements && size - elements >= kLengthsChecksumBytes, CheckpointError,
                where, " a size of ", size, " bytes, too small for ", elements, " strings");
      return;
    }
    const auto type = ScalarTypeOf(entry.dtype());
    if (!type) return;  // a type this build cannot read: refused when it is read
    uint64_t bytes = 0;
    EST_CHECK(!__builtin_mul_overflow(elements, c10::elementSize(*type), &bytes) && bytes == size,
              CheckpointError, where, " a size of ", size,
              " bytes, which does not match its shape and dtype");
  }

  const BundleTensor& whole_tensor(const std::string& name) const {
    const BundleTensor& stored = tensors_.at(name);
    EST_CHECK(stored.entry.slices_size() == 0, CheckpointError, "checkpoint '", index_path_,
              "' holds tensor '", name, "' as a TensorFlow partitioned variable (",
              stored.entry.slices_size(), " slices); this build reads whole tensors only");
    return stored;
  }

  std::vector<std::string> read_strings(const BundleTensor& stored, const std::string& what) const {
    const auto& entry = stored.entry;
    const DataFile& data = data_[static_cast<size_t>(entry.shard_id())];
    std::string bytes(static_cast<size_t>(entry.size()), '\0');
    data.read(static_cast<uint64_t>(entry.offset()), bytes.size(), bytes.data(), what);
    return DecodeStringTensor(bytes, stored.elements, crc32c::Unmask(entry.crc32c()),
                              "checkpoint data file '" + data.path() + "' is corrupt: " + what);
  }

  std::string index_path_;
  std::vector<DataFile> data_;
  std::map<std::string, BundleTensor> tensors_;
  std::map<std::string, BundleTensor> blobs_;
};

}  // namespace

std::unique_ptr<FormatReader> OpenBundleCheckpoint(const std::string& prefix,
                                                   const std::string& index_bytes) {
  return std::make_unique<BundleCheckpointReader>(prefix, index_bytes);
}

}  // namespace est::checkpoint
