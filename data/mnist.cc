#include "data/mnist.h"

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "common/error.h"
#include "data/idx.h"

namespace est::data {
namespace {

namespace fs = std::filesystem;

/// <dir>/<stem>.gz when it exists, else <dir>/<stem>; DataError when neither does.
std::string FindIdxFile(const fs::path& dir, const std::string& stem) {
  const fs::path gzip = dir / (stem + ".gz");
  const fs::path plain = dir / stem;
  std::error_code error;
  if (fs::exists(gzip, error)) return gzip.string();
  if (fs::exists(plain, error)) return plain.string();
  EST_THROW(DataError, "MNIST data: neither ", gzip.string(), " nor ", plain.string(), " exists");
}

void CheckDirectory(const std::string& dir, const std::string& split) {
  EST_CHECK(split == "train" || split == "t10k", DataError, "MNIST data: split is '", split,
            "', expected 'train' or 't10k'");
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);
  EST_CHECK(fs::exists(status), DataError, "MNIST data: directory ", dir, " does not exist");
  EST_CHECK(fs::is_directory(status), DataError, "MNIST data: ", dir, " is ",
            fs::is_regular_file(status) ? "a file" : "not a directory", ", expected the directory of the IDX files");
}

// The tensor of IDX file `path`, decoded once for every data set of this process made from
// the file as it is now (its size and modification time), while any of them lives: a job
// that reads several shards of one data set (logical input shards, a regroup) decompresses
// its files once.
at::Tensor ReadIdxShared(const std::string& path) {
  using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  static std::mutex mutex;
  static auto* const decoded = new std::map<std::string, WeakTensor>();  // never destroyed: used at exit
  std::error_code error;
  const auto size = fs::file_size(path, error);
  const auto modified = fs::last_write_time(path, error).time_since_epoch().count();
  const std::string key = path + "\n" + std::to_string(size) + "\n" + std::to_string(modified);
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = decoded->find(key); found != decoded->end()) {
    c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> alive = found->second.lock();
    if (alive.defined()) return at::Tensor(std::move(alive));
    decoded->erase(found);
  }
  at::Tensor tensor = ReadIdx(path);
  decoded->emplace(key, WeakTensor(tensor.getIntrusivePtr()));
  return tensor;
}

}  // namespace

void CheckMnistFiles(const std::string& dir, const std::string& split) {
  CheckDirectory(dir, split);
  FindIdxFile(dir, split + "-images-idx3-ubyte");
  FindIdxFile(dir, split + "-labels-idx1-ubyte");
}

Dataset Mnist(const std::string& dir, const std::string& split) {
  CheckDirectory(dir, split);
  const std::string images_path = FindIdxFile(dir, split + "-images-idx3-ubyte");
  const std::string labels_path = FindIdxFile(dir, split + "-labels-idx1-ubyte");
  at::Tensor images = ReadIdxShared(images_path);
  at::Tensor labels = ReadIdxShared(labels_path);
  EST_CHECK(images.dim() == 3 && images.scalar_type() == at::kByte, DataError, images_path,
            ": expected uint8 images of shape [count, rows, cols], found ", images.scalar_type(),
            " of shape ", images.sizes());
  EST_CHECK(labels.dim() == 1 && labels.scalar_type() == at::kByte, DataError, labels_path,
            ": expected uint8 labels of shape [count], found ", labels.scalar_type(), " of shape ",
            labels.sizes());
  EST_CHECK(images.size(0) == labels.size(0), DataError, images_path, " holds ", images.size(0),
            " images but ", labels_path, " holds ", labels.size(0), " labels");
  return Dataset::FromTensors({{"image", images}}, labels.to(at::kLong));
}

Dataset FashionMnist(const std::string& dir, const std::string& split) { return Mnist(dir, split); }

}  // namespace est::data
