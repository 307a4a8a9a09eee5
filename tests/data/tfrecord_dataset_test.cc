// TFRecordDataset and ListFiles: records of several files in order, raw or parsed; errors
// naming the file and the record; skip() by headers without parsing; globbing and shuffling
// file lists.

#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "data/example/example.pb.h"
#include "data/list_files.h"
#include "data/tfrecord_dataset.h"
#include "tests/data/record_files.h"
#include "tests/data/test_datasets.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::Element;
using est::data::TFRecordCompression;
using est::data::TFRecordDataset;
using est::data::TFRecordDatasetOptions;
using est::data::TFRecordReaderOptions;
using est::testing::NumberParser;
using est::testing::WriteNumberedFiles;
using est::testing::Xs;
using Ints = std::vector<int64_t>;

TEST_CASE("TFRecordDataset reads the records of its files in order", "[data][tfrecord]") {
  for (auto compression : {TFRecordCompression::kNone, TFRecordCompression::kGzip}) {
    const auto files = WriteNumberedFiles("tfrecord_dataset_order", {3, 0, 2}, compression);
    const auto reader = TFRecordReaderOptions().compression(compression);
    CHECK(Xs(TFRecordDataset(files, TFRecordDatasetOptions().reader(reader).parser(NumberParser))) ==
          Ints{0, 1, 2, 200, 201});
    const auto raw = est::testing::Drain(TFRecordDataset(files, TFRecordDatasetOptions().reader(reader)));
    REQUIRE(raw.size() == 5);
    CHECK(torch::equal(raw[3].features.at("record"), torch::tensor({'2', '0', '0'}, torch::kUInt8)));
    CHECK(raw[3].features.size() == 1);
    CHECK(Xs(TFRecordDataset({}, TFRecordDatasetOptions().parser(NumberParser))).empty());
  }
}

TEST_CASE("TFRecordDataset parses tf.train.Example records into batches", "[data][tfrecord]") {
  const auto dir = est::testing::FreshTempDir("tfrecord_dataset_examples");
  const std::string path = (dir / "examples.tfrecord").string();
  est::data::TFRecordWriter writer(path);
  for (int i = 0; i < 5; ++i) {
    est::tfexample::Example example;
    auto& features = *example.mutable_features()->mutable_feature();
    features["label"].mutable_int64_list()->add_value(i);
    features["image"].mutable_bytes_list()->add_value(std::string(4, static_cast<char>(i)));
    writer.write(example.SerializeAsString());
  }
  writer.close();
  using est::data::FeatureSpec;
  using est::data::FeatureType;
  const auto parser = est::data::ParseExample(
      {{"label", FeatureSpec::FixedLen(FeatureType::kInt64)},
       {"image", FeatureSpec::FixedLen(FeatureType::kBytes).decoder(est::data::DecodeRaw(torch::kUInt8, {2, 2}))}},
      "label");
  const auto batches = est::testing::Drain(TFRecordDataset({path}, TFRecordDatasetOptions().parser(parser)).batch(2));
  REQUIRE(batches.size() == 3);
  CHECK(torch::equal(batches[1].labels, torch::tensor({2, 3}, torch::kLong)));
  CHECK(torch::equal(batches[1].features.at("image"), torch::tensor({2, 3}, torch::kUInt8).view({2, 1, 1}).expand({2, 2, 2})));
}

TEST_CASE("TFRecordDataset errors name the file and the record", "[data][tfrecord]") {
  const auto files = WriteNumberedFiles("tfrecord_dataset_errors", {2, 3});
  CHECK_THROWS_WITH(TFRecordDataset({files[0], files[1] + ".missing"}),
                    "TFRecordDataset: file '" + files[1] + ".missing' does not exist");
  CHECK_THROWS_AS(TFRecordDataset({std::filesystem::path(files[0]).parent_path().string()}), est::IoError);
  auto picky = [](std::string_view record) {
    EST_CHECK(record != "101", est::DataError, "feature 'x' is not welcome");
    return NumberParser(record);
  };
  auto iterator = TFRecordDataset(files, TFRecordDatasetOptions().parser(picky)).make_iterator();
  CHECK(iterator->skip(3) == 3);
  CHECK_THROWS_WITH(iterator->next(), "TFRecord file '" + files[1] + "': record 1: feature 'x' is not welcome");
  CHECK(Xs(*iterator) == Ints{102});

  std::ofstream(files[0], std::ios::app) << "garbage!";  // 8 bytes: a header cut short
  CHECK_THROWS_WITH(Xs(TFRecordDataset(files, TFRecordDatasetOptions().parser(NumberParser))),
                    Catch::Contains("TFRecord file '" + files[0] + "': record 2 at byte 34") &&
                        Catch::Contains("cut short"));
}

TEST_CASE("TFRecordDataset skips by record headers without parsing", "[data][tfrecord]") {
  const auto files = WriteNumberedFiles("tfrecord_dataset_skip", {4, 0, 5, 1}, TFRecordCompression::kZlib);
  std::atomic<int> parsed{0};
  const auto options = TFRecordDatasetOptions()
                           .reader(TFRecordReaderOptions().compression(TFRecordCompression::kZlib))
                           .parser([&parsed](std::string_view record) {
                             ++parsed;
                             return NumberParser(record);
                           });
  for (int64_t count : {0, 3, 4, 8, 9, 10, 20}) {
    auto iterator = TFRecordDataset(files, options).make_iterator();
    parsed = 0;
    CHECK(iterator->skip(count) == std::min<int64_t>(count, 10));
    CHECK(parsed == 0);
    const Ints all{0, 1, 2, 3, 200, 201, 202, 203, 204, 300};
    CHECK(Xs(*iterator) == Ints(all.begin() + std::min<int64_t>(count, 10), all.end()));
  }
}

TEST_CASE("ListFiles globs regular files, sorted or shuffled by a seed", "[data][tfrecord]") {
  const auto dir = est::testing::FreshTempDir("list_files");
  std::vector<std::string> expected;
  for (const char* name : {"a-1", "a-10", "a-2", "b-1", "a-3.tmp"}) std::ofstream(dir / name) << name;
  std::filesystem::create_directory(dir / "a-dir");
  const std::string pattern = (dir / "a-[0-9]*").string();
  const auto sorted = est::data::ListFiles(pattern, false);
  CHECK(sorted == std::vector<std::string>{(dir / "a-1").string(), (dir / "a-10").string(), (dir / "a-2").string(),
                                            (dir / "a-3.tmp").string()});
  const auto shuffled = est::data::ListFiles(pattern, true, 7);
  CHECK(shuffled == est::data::ListFiles(pattern, true, 7));
  CHECK(std::is_permutation(shuffled.begin(), shuffled.end(), sorted.begin(), sorted.end()));
  bool some_order_differs = false;
  for (uint64_t seed = 0; seed < 10; ++seed) some_order_differs |= est::data::ListFiles(pattern, true, seed) != shuffled;
  CHECK(some_order_differs);
  CHECK_THROWS_WITH(est::data::ListFiles((dir / "c-*").string(), false),
                    "ListFiles: no file matches '" + (dir / "c-*").string() + "'");
  CHECK_THROWS_WITH(est::data::ListFiles((dir / "a-dir").string(), false), Catch::Contains("no file matches"));
}
