#include "data/mnist.h"

#include <filesystem>

#include "common/error.h"
#include "tests/data/idx_writer.h"
#include "tests/data/test_datasets.h"
#include "tests/test_util.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::Dataset;
using est::data::FashionMnist;
using est::data::Mnist;
using est::testing::Drain;
using est::testing::FreshTempDir;
using est::testing::IdxBytes;
using est::testing::WriteBytes;

namespace fs = std::filesystem;

namespace {

const char* const kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Writes <dir>/<split>-{images-idx3,labels-idx1}-ubyte[.gz] with `count` 2x3 images whose
/// pixels are all `first_label + i` and labels `first_label + i`.
void WriteSplit(const fs::path& dir, const std::string& split, uint32_t count, uint8_t first_label,
                bool gzip) {
  std::string pixels, labels;
  for (uint32_t i = 0; i < count; ++i) {
    pixels += std::string(6, static_cast<char>(first_label + i));
    labels += static_cast<char>(first_label + i);
  }
  const std::string suffix = gzip ? ".gz" : "";
  WriteBytes((dir / (split + "-images-idx3-ubyte" + suffix)).string(),
             IdxBytes(0x08, {count, 2, 3}, pixels), gzip);
  WriteBytes((dir / (split + "-labels-idx1-ubyte" + suffix)).string(),
             IdxBytes(0x08, {count}, labels), gzip);
}

}  // namespace

TEST_CASE("Mnist data sets of the same files share one decoded copy; changed files are read again", "[data]") {
  const auto dir = FreshTempDir("mnist_shared");
  WriteSplit(dir, "t10k", 3, 4, /*gzip=*/true);
  const auto first_image = [](const Dataset& dataset) { return Drain(dataset).front().features.at("image"); };
  Dataset one = Mnist(dir.string(), "t10k");
  Dataset two = Mnist(dir.string(), "t10k");
  CHECK(first_image(one).data_ptr() == first_image(two).data_ptr());
  // Rewritten while `one` lives: the new files' images.
  WriteSplit(dir, "t10k", 4, 9, /*gzip=*/true);
  const auto elements = Drain(Mnist(dir.string(), "t10k"));
  REQUIRE(elements.size() == 4);
  CHECK(elements.front().features.at("image").max().item<int64_t>() == 9);
  CHECK(first_image(one).max().item<int64_t>() == 4);
}

TEST_CASE("Mnist on small IDX files", "[data]") {
  SECTION("Mnist reads images and int64 labels from IDX files") {
    const auto dir = FreshTempDir("mnist_small");
    WriteSplit(dir, "t10k", 3, 4, /*gzip=*/false);
    auto elements = Drain(Mnist(dir.string(), "t10k"));
    REQUIRE(elements.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      const at::Tensor& image = elements[i].features.at("image");
      CHECK(elements[i].features.size() == 1);
      CHECK(image.sizes() == at::IntArrayRef{2, 3});
      CHECK(image.scalar_type() == at::kByte);
      CHECK(image.min().item<int64_t>() == static_cast<int64_t>(4 + i));
      CHECK(image.max().item<int64_t>() == static_cast<int64_t>(4 + i));
      CHECK(elements[i].labels.scalar_type() == at::kLong);
      CHECK(elements[i].labels.dim() == 0);
      CHECK(elements[i].labels.item<int64_t>() == static_cast<int64_t>(4 + i));
    }
  }

  SECTION("Mnist prefers the .gz files when both exist") {
    const auto dir = FreshTempDir("mnist_prefer_gz");
    WriteSplit(dir, "train", 2, 0, /*gzip=*/false);
    WriteSplit(dir, "train", 5, 1, /*gzip=*/true);
    auto elements = Drain(FashionMnist(dir.string(), "train"));
    REQUIRE(elements.size() == 5);
    CHECK(elements[0].labels.item<int64_t>() == 1);
  }

  SECTION("Mnist errors name the directory or file at fault") {
    using Catch::Contains;
    const auto dir = FreshTempDir("mnist_errors");
    const std::string missing_dir = (dir / "absent").string();
    CHECK_THROWS_AS(Mnist(missing_dir, "train"), est::DataError);
    CHECK_THROWS_WITH(Mnist(missing_dir, "train"), Contains(missing_dir));
    CHECK_THROWS_WITH(Mnist(dir.string(), "test"), Contains("'test'") && Contains("t10k"));
    CHECK_THROWS_WITH(Mnist(dir.string(), "train"),
                      Contains((dir / "train-images-idx3-ubyte.gz").string()) &&
                          Contains((dir / "train-images-idx3-ubyte").string()));

    WriteSplit(dir, "train", 3, 0, /*gzip=*/false);
    const std::string labels_path = (dir / "train-labels-idx1-ubyte").string();
    WriteBytes(labels_path, IdxBytes(0x08, {2}, "\1\2"), false);
    CHECK_THROWS_WITH(Mnist(dir.string(), "train"), Contains("holds 3 images") &&
                                                        Contains(labels_path) &&
                                                        Contains("holds 2 labels"));

    const std::string images_path = (dir / "train-images-idx3-ubyte").string();
    WriteBytes(images_path, IdxBytes(0x08, {2, 6}, std::string(12, '\0')), false);
    CHECK_THROWS_WITH(Mnist(dir.string(), "train"), Contains(images_path) && Contains("[2, 6]"));
  }

  SECTION("CheckMnistFiles finds a missing split, or a file given for the directory, before any reading") {
    const auto dir = FreshTempDir("mnist_check");
    WriteSplit(dir, "train", 2, 0, /*gzip=*/true);
    est::data::CheckMnistFiles(dir.string(), "train");
    CHECK_THROWS_MATCHES(est::data::CheckMnistFiles(dir.string(), "t10k"), est::DataError,
                         est::testing::MessageMatches(Catch::Equals(
                             "MNIST data: neither " + (dir / "t10k-images-idx3-ubyte.gz").string() + " nor " +
                             (dir / "t10k-images-idx3-ubyte").string() + " exists")));
    const std::string file = (dir / "train-labels-idx1-ubyte.gz").string();
    CHECK_THROWS_MATCHES(est::data::CheckMnistFiles(file, "train"), est::DataError,
                         est::testing::MessageMatches(Catch::Equals(
                             "MNIST data: " + file + " is a file, expected the directory of the IDX files")));
    CHECK_THROWS_MATCHES(Mnist((dir / "absent").string(), "train"), est::DataError,
                         est::testing::MessageMatches(Catch::Equals(
                             "MNIST data: directory " + (dir / "absent").string() + " does not exist")));
  }
}

TEST_CASE("Fashion-MNIST loads with its real sizes and labels", "[data]") {
  SECTION("Fashion-MNIST loads with its real sizes and labels") {
    INFO(kFashionMnistDir << " comes with the Debian package dataset-fashion-mnist (make deps)");
    REQUIRE(fs::is_directory(kFashionMnistDir));
    for (const auto& [split, expected_count] :
         {std::pair<std::string, int64_t>{"train", 60000}, {"t10k", 10000}}) {
      Dataset dataset = FashionMnist(kFashionMnistDir, split);
      auto first = dataset.make_iterator()->next();
      REQUIRE(first.has_value());
      CHECK(first->features.at("image").sizes() == at::IntArrayRef{28, 28});
      CHECK(first->features.at("image").scalar_type() == at::kByte);
      CHECK(first->labels.scalar_type() == at::kLong);
      if (split == "train") CHECK(first->labels.item<int64_t>() == 9);

      int64_t count = 0;
      std::vector<int64_t> per_class(10, 0);
      auto batches = dataset.batch(10000).make_iterator();
      while (auto batch = batches->next()) {
        count += batch->labels.size(0);
        CHECK(batch->labels.min().item<int64_t>() >= 0);
        CHECK(batch->labels.max().item<int64_t>() <= 9);
        CHECK(batch->features.at("image").sizes().slice(1) == at::IntArrayRef{28, 28});
        at::Tensor counts = batch->labels.bincount({}, 10);
        for (int64_t c = 0; c < 10; ++c)
          per_class[static_cast<size_t>(c)] += counts[c].item<int64_t>();
      }
      CHECK(count == expected_count);
      for (int64_t n : per_class) CHECK(n == expected_count / 10);  // Fashion-MNIST is balanced
    }
  }
}
