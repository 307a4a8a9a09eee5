// est-idx-to-tfrecord: writes the Fashion-MNIST (or MNIST) IDX files as TFRecord shards of
// tf.train.Example, the way TensorFlow pipelines store such data: per example the 784 pixels
// as one bytes feature "image" and the class as an int64 feature "label"
// (est_apps::FashionMnistExampleSpec reads them back).

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/common/fashion_mnist_cnn.h"
#include "apps/common/number_checks.h"
#include "apps/common/parse_flags.h"
#include "common/error.h"
#include "common/file_util.h"
#include "data/example/example.pb.h"
#include "data/mnist.h"
#include "data/tfrecord.h"

namespace {

struct Flags {
  std::string data_dir = est_apps::kFashionMnistDir;
  std::string output_dir;
  int64_t train_shards = 10;
  int64_t eval_shards = 2;
  std::string compression = "none";
};

/// "<split>-00003-of-00010.tfrecord[.gz|.zz]", TensorFlow's way of naming shards.
std::string ShardName(const std::string& split, int64_t shard, int64_t shards, est::data::TFRecordCompression compression) {
  char name[96];
  std::snprintf(name, sizeof name, "%s-%05lld-of-%05lld.tfrecord", split.c_str(), static_cast<long long>(shard),
                static_cast<long long>(shards));
  const char* suffix = compression == est::data::TFRecordCompression::kGzip   ? ".gz"
                       : compression == est::data::TFRecordCompression::kZlib ? ".zz"
                                                                               : "";
  return std::string(name) + suffix;
}

/// ConfigError when `dir` holds shards of a split already (of any shard count): a glob over
/// the split would read both sets.
void CheckNoShards(const std::string& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool shard = (name.rfind("train-", 0) == 0 || name.rfind("t10k-", 0) == 0) &&
                       name.find("-of-") != std::string::npos;
    EST_CHECK(!shard, est::ConfigError, "--output-dir '", dir, "' holds shards already (", name,
              "); a glob over a split would read both sets, so choose another directory");
  }
}

/// One example as a serialized tf.train.Example.
std::string ExampleRecord(const torch::Tensor& image, int64_t label) {
  est::tfexample::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  const torch::Tensor pixels = image.contiguous();
  features["image"].mutable_bytes_list()->add_value(static_cast<const char*>(pixels.data_ptr()), pixels.nbytes());
  features["label"].mutable_int64_list()->add_value(label);
  return example.SerializeAsString();
}

/// Writes `split`'s examples into `shards` files of consecutive examples; returns the count.
int64_t WriteSplit(const Flags& flags, const std::string& split, int64_t shards,
                   est::data::TFRecordCompression compression) {
  const est::data::Dataset examples = est::data::FashionMnist(flags.data_dir, split);
  const int64_t count = examples.cardinality();
  auto iterator = examples.make_iterator();
  for (int64_t shard = 0; shard < shards; ++shard) {
    const std::string path =
        (std::filesystem::path(flags.output_dir) / ShardName(split, shard, shards, compression)).string();
    est::data::TFRecordWriter writer(path, compression);
    const int64_t end = count * (shard + 1) / shards;
    for (int64_t i = count * shard / shards; i < end; ++i) {
      const auto example = iterator->next();
      EST_ASSERT(example.has_value(), "the IDX data set ended before its cardinality");
      writer.write(ExampleRecord(example->features.at("image"), example->labels.item<int64_t>()));
    }
    writer.close();
  }
  std::printf("%s: %lld examples in %lld shard(s) in %s\n", split.c_str(), static_cast<long long>(count),
              static_cast<long long>(shards), flags.output_dir.c_str());
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("est-idx-to-tfrecord: Fashion-MNIST IDX files as TFRecord shards of tf.train.Example",
               "est-idx-to-tfrecord");
  Flags flags;
  app.add_option("--data-dir", flags.data_dir, "Directory with the IDX files")->capture_default_str();
  app.add_option("--output-dir", flags.output_dir,
                 "Directory for train-NNNNN-of-NNNNN.tfrecord and t10k-… shards; existing shards are never overwritten")
      ->required();
  app.add_option("--train-shards", flags.train_shards, "Files for the 60,000 training examples")
      ->check(est_apps::IntegerIn<int64_t>(1, 60000))
      ->capture_default_str();
  app.add_option("--eval-shards", flags.eval_shards, "Files for the 10,000 test examples")
      ->check(est_apps::IntegerIn<int64_t>(1, 10000))
      ->capture_default_str();
  app.add_option("--compression", flags.compression, "none, gzip or zlib")
      ->check(CLI::IsMember({"none", "gzip", "zlib"}, CLI::ignore_case))
      ->capture_default_str();
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "est-idx-to-tfrecord")) return *exit_status;
  try {
    for (const char* split : {"train", "t10k"}) est::data::CheckMnistFiles(flags.data_dir, split);
    const auto compression = est::data::ParseTFRecordCompression(flags.compression);
    est::CreateDirectories(flags.output_dir);
    CheckNoShards(flags.output_dir);
    WriteSplit(flags, "train", flags.train_shards, compression);
    WriteSplit(flags, "t10k", flags.eval_shards, compression);
    return 0;
  } catch (const est::Error& e) {
    std::fprintf(stderr, "est-idx-to-tfrecord: error: %s\n", e.what());
    return 1;
  }
}
