#include "checkpoint/checkpoint_reader.h"

#include <algorithm>

#include "checkpoint/bundle_checkpoint_reader.h"
#include "checkpoint/checkpoint_files.h"
#include "checkpoint/data_type.h"
#include "checkpoint/data_type.pb.h"
#include "checkpoint/format_reader.h"
#include "checkpoint/leveldb_table.h"
#include "checkpoint/manifest_checkpoint_reader.h"
#include "common/error.h"
#include "common/file_util.h"

namespace est::checkpoint {
namespace {

/// How many available names an error about a missing tensor lists.
constexpr size_t kNamesInError = 5;

size_t CommonPrefixLength(const std::string& a, const std::string& b) {
  return static_cast<size_t>(
      std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin()).first -
      a.begin());
}

}  // namespace

struct CheckpointReader::Impl {
  std::string prefix;
  std::unique_ptr<FormatReader> format;

  /// Throws the error of a name the checkpoint lacks, listing the most similar names.
  void check_exists(const std::string& name) const {
    if (format->has_tensor(name)) return;
    std::vector<std::string> names = format->tensor_names();
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
      return CommonPrefixLength(a, name) > CommonPrefixLength(b, name);
    });
    std::string listed;
    for (size_t i = 0; i < std::min(names.size(), kNamesInError); ++i)
      listed += (i ? ", '" : "'") + names[i] + "'";
    if (names.size() > kNamesInError) listed += ", ...";
    EST_THROW(CheckpointError, "checkpoint '", prefix, "' has no tensor '", name, "'; it has ",
              names.size(), " tensors", names.empty() ? "" : ", among them ", listed);
  }

  /// The dtype of an existing tensor, or CheckpointError naming it when LibTorch has none.
  at::ScalarType scalar_type(const std::string& name) const {
    check_exists(name);
    const int data_type = format->data_type(name);
    EST_CHECK(data_type != proto::DT_STRING, CheckpointError, "checkpoint '", prefix,
              "' holds strings (DT_STRING) in tensor '", name, "'; read them with string_tensor()");
    const auto type = ScalarTypeOf(data_type);
    EST_CHECK(type.has_value(), CheckpointError, "checkpoint '", prefix, "' holds tensor '", name,
              "' of TensorFlow DataType ", data_type, ", which this build cannot read");
    return *type;
  }
};

CheckpointReader::CheckpointReader(const std::string& prefix) : impl_(std::make_unique<Impl>()) {
  impl_->prefix = prefix;
  const std::string index_path = IndexPath(prefix);
  EST_CHECK(CheckpointExists(prefix), CheckpointError, "checkpoint '", prefix,
            "' does not exist: there is no index file '", index_path, "'");
  std::string index_bytes;
  try {
    index_bytes = ReadFile(index_path);
  } catch (const IoError& error) {
    EST_THROW(CheckpointError, "checkpoint index '", index_path, "' cannot be read: ", error.what());
  }
  impl_->format = HasTableMagic(index_bytes) ? OpenBundleCheckpoint(prefix, index_bytes)
                                             : OpenManifestCheckpoint(prefix, index_bytes);
}

CheckpointReader::~CheckpointReader() = default;
CheckpointReader::CheckpointReader(CheckpointReader&&) noexcept = default;
CheckpointReader& CheckpointReader::operator=(CheckpointReader&&) noexcept = default;

const std::string& CheckpointReader::prefix() const { return impl_->prefix; }

int64_t CheckpointReader::global_step() const { return impl_->format->global_step(); }

std::vector<std::string> CheckpointReader::tensor_names() const {
  return impl_->format->tensor_names();
}

bool CheckpointReader::has_tensor(const std::string& name) const {
  return impl_->format->has_tensor(name);
}

std::vector<int64_t> CheckpointReader::shape(const std::string& name) const {
  impl_->check_exists(name);
  return impl_->format->shape(name);
}

at::ScalarType CheckpointReader::dtype(const std::string& name) const {
  return impl_->scalar_type(name);
}

at::Tensor CheckpointReader::tensor(const std::string& name) const {
  impl_->scalar_type(name);
  return impl_->format->tensor(name);
}

std::vector<std::string> CheckpointReader::string_tensor(const std::string& name) const {
  impl_->check_exists(name);
  EST_CHECK(impl_->format->data_type(name) == proto::DT_STRING, CheckpointError, "checkpoint '",
            impl_->prefix, "' holds tensor '", name, "' of TensorFlow DataType ",
            impl_->format->data_type(name), ", not strings (DT_STRING); read it with tensor()");
  return impl_->format->strings(name);
}

std::vector<std::string> CheckpointReader::blob_names() const { return impl_->format->blob_names(); }

std::optional<std::string> CheckpointReader::blob(const std::string& name) const {
  return impl_->format->blob(name);
}

void CheckpointReader::verify() const { impl_->format->verify(); }

}  // namespace est::checkpoint
