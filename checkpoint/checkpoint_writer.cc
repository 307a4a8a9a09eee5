#include "checkpoint/checkpoint_writer.h"

#include <ATen/ops/scalar_tensor.h>
#include <unistd.h>

#include <set>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/data_type.h"
#include "checkpoint/string_tensor.h"
#include "checkpoint/tensor_bundle_index.h"
#include "common/crash_point.h"
#include "common/crc32c.h"
#include "common/error.h"
#include "common/file_util.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint data is stored little-endian as it lies in memory");

namespace est::checkpoint {
namespace {

/// Every tensor and blob starts at a multiple of this many bytes in the data file.
constexpr uint64_t kAlignment = 64;

using Entries = std::vector<std::pair<std::string, proto::BundleEntryProto>>;

void CheckNames(const std::string& prefix,
                const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    EST_CHECK(!name.empty(), CheckpointError, "cannot write checkpoint '", prefix,
              "': a tensor has an empty name");
    EST_CHECK(name.rfind(kBlobKeyPrefix, 0) != 0, CheckpointError, "cannot write checkpoint '",
              prefix, "': tensor name '", name, "' starts with '", kBlobKeyPrefix,
              "', which is reserved for blobs");
    EST_CHECK(seen.insert(name).second, CheckpointError, "cannot write checkpoint '", prefix,
              "': tensor name '", name, "' appears more than once");
  }
}

/// The tensor as dense, contiguous CPU memory in its logical element order.
at::Tensor ToContiguousCpu(const std::string& prefix, const std::string& name,
                           const at::Tensor& tensor) {
  EST_CHECK(tensor.defined(), CheckpointError, "cannot write checkpoint '", prefix, "': tensor '",
            name, "' is undefined");
  EST_CHECK(tensor.layout() == at::kStrided, CheckpointError, "cannot write checkpoint '", prefix,
            "': tensor '", name, "' has layout ", tensor.layout(),
            "; only dense (strided) tensors can be saved");
  EST_CHECK(DataTypeNumber(tensor.scalar_type()).has_value(), CheckpointError,
            "cannot write checkpoint '", prefix, "': tensor '", name, "' has dtype ",
            tensor.scalar_type(), ", which a checkpoint cannot hold");
  return tensor.detach().to(at::kCPU).resolve_conj().resolve_neg().contiguous();
}

/// A caller's `global_step` tensor must say what global_step() will read back.
void CheckGlobalStepTensor(const std::string& prefix, const at::Tensor& tensor, int64_t step) {
  const bool integer_scalar = tensor.dim() == 0 &&
                              (tensor.scalar_type() == at::kLong || tensor.scalar_type() == at::kInt);
  EST_CHECK(integer_scalar && tensor.item<int64_t>() == step, CheckpointError,
            "cannot write checkpoint '", prefix, "': its tensor '", kGlobalStepTensorName,
            "' must be an int64 or int32 scalar holding the global step ", step);
}

/// Pads the data file to the next aligned offset and returns it.
uint64_t Align(AtomicFileWriter& data) {
  static const std::string kZeros(kAlignment, '\0');
  const uint64_t remainder = data.size() % kAlignment;
  if (remainder != 0) data.append(kZeros.data(), kAlignment - remainder);
  return data.size();
}

proto::BundleEntryProto EntryAt(int data_type, at::IntArrayRef shape, uint64_t offset,
                                uint64_t size, uint32_t crc) {
  proto::BundleEntryProto entry;
  entry.set_dtype(static_cast<proto::DataType>(data_type));
  for (int64_t dim : shape) entry.mutable_shape()->add_dim()->set_size(dim);
  entry.set_shard_id(0);
  entry.set_offset(static_cast<int64_t>(offset));
  entry.set_size(static_cast<int64_t>(size));
  entry.set_crc32c(crc32c::Mask(crc));
  return entry;
}

void AppendTensor(AtomicFileWriter& data, const std::string& name, const at::Tensor& tensor,
                  Entries& entries) {
  const uint64_t offset = Align(data);
  const uint64_t size = tensor.nbytes();
  if (size > 0) data.append(tensor.data_ptr(), size);
  entries.emplace_back(name, EntryAt(*DataTypeNumber(tensor.scalar_type()), tensor.sizes(), offset,
                                     size, crc32c::Value(tensor.data_ptr(), size)));
}

void AppendBlob(AtomicFileWriter& data, const std::string& name, const std::string& bytes,
                Entries& entries) {
  const StringTensorLayout layout = LayOutStringTensor({bytes});
  const uint64_t offset = Align(data);
  data.append(layout.lengths_and_checksum.data(), layout.lengths_and_checksum.size());
  if (!bytes.empty()) data.append(bytes.data(), bytes.size());
  entries.emplace_back(kBlobKeyPrefix + name,
                       EntryAt(proto::DT_STRING, {}, offset, layout.size, layout.crc32c));
}

}  // namespace

void WriteCheckpoint(const std::string& prefix,
                     const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                     const std::map<std::string, std::string>& blobs, int64_t global_step) {
  CheckNames(prefix, tensors);
  Entries entries;
  entries.reserve(tensors.size() + blobs.size() + 1);
  bool has_global_step = false;
  bool data_committed = false;
  try {
    AtomicFileWriter data(DataPath(prefix));
    for (const auto& [name, tensor] : tensors) {
      const at::Tensor stored = ToContiguousCpu(prefix, name, tensor);
      if (name == kGlobalStepTensorName) {
        CheckGlobalStepTensor(prefix, stored, global_step);
        has_global_step = true;
      }
      AppendTensor(data, name, stored, entries);
    }
    if (!has_global_step)
      AppendTensor(data, kGlobalStepTensorName, at::scalar_tensor(global_step, at::kLong), entries);
    for (const auto& [name, bytes] : blobs) AppendBlob(data, name, bytes, entries);
    CrashPoint("checkpoint_data", global_step);  // the data file is still a temporary file
    data.commit();
    data_committed = true;
    CrashPoint("checkpoint_index", global_step);  // new data file, index not yet written
    WriteFileAtomic(IndexPath(prefix), EncodeBundleIndex(entries, 1));
  } catch (const IoError& error) {
    if (data_committed) {
      // The data file was replaced: an index from before no longer matches it.
      ::unlink(IndexPath(prefix).c_str());
      ::unlink(DataPath(prefix).c_str());
    }
    EST_THROW(CheckpointError, "cannot write checkpoint '", prefix, "': ", error.what());
  }
}

}  // namespace est::checkpoint
