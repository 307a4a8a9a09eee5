// Dataset::InterleaveFiles: tf.data's interleave order (the orders below are what TensorFlow
// 2.15 printed for the same file sizes), the same order with threads, every element without
// determinism, errors at their position, and skip().

#include <torch/torch.h>

#include <algorithm>
#include <atomic>

#include "common/error.h"
#include "data/dataset.h"
#include "data/tfrecord_dataset.h"
#include "tests/data/record_files.h"
#include "tests/data/test_datasets.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::Dataset;
using est::data::InterleaveOptions;
using est::data::TFRecordDataset;
using est::data::TFRecordDatasetOptions;
using est::testing::NumberParser;
using est::testing::Xs;
using Ints = std::vector<int64_t>;

namespace {

/// Files of 3, 1, 4 and 2 records: 0..2, 100, 200..203, 300..301.
const std::vector<std::string>& Files() {
  static const auto files = est::testing::WriteNumberedFiles("interleave", {3, 1, 4, 2});
  return files;
}

Dataset Records(const std::string& file) {
  return TFRecordDataset({file}, TFRecordDatasetOptions().parser(NumberParser));
}

Dataset Interleaved(InterleaveOptions options) { return Dataset::InterleaveFiles(Files(), Records, options); }

}  // namespace

TEST_CASE("InterleaveFiles gives tf.data's interleave order, with and without threads", "[data][interleave]") {
  const std::vector<std::tuple<int64_t, int64_t, Ints>> orders = {
      {2, 2, {0, 1, 100, 2, 200, 201, 300, 301, 202, 203}},
      {3, 1, {0, 100, 200, 1, 201, 2, 300, 202, 301, 203}},
      {4, 3, {0, 1, 2, 100, 200, 201, 202, 300, 301, 203}},
      {1, 1, {0, 1, 2, 100, 200, 201, 202, 203, 300, 301}},
  };
  for (const auto& [cycle_length, block_length, expected] : orders) {
    for (int64_t threads : {int64_t{1}, int64_t{2}, int64_t{4}, est::data::kAutotune}) {
      INFO("cycle_length " << cycle_length << ", block_length " << block_length << ", " << threads << " threads");
      const auto options =
          InterleaveOptions().cycle_length(cycle_length).block_length(block_length).num_parallel_calls(threads);
      CHECK(Xs(Interleaved(options)) == expected);
    }
  }
  // More slots than files: the same order as one slot per file.
  CHECK(Xs(Interleaved(InterleaveOptions().cycle_length(9).block_length(2))) ==
        Xs(Interleaved(InterleaveOptions().cycle_length(4).block_length(2))));
  CHECK(Xs(Dataset::InterleaveFiles({}, Records)).empty());
}

TEST_CASE("InterleaveFiles without determinism gives every element once", "[data][interleave]") {
  const auto options = InterleaveOptions().cycle_length(4).num_parallel_calls(4).deterministic(false);
  for (int pass = 0; pass < 20; ++pass) {
    Ints xs = Xs(Interleaved(options));
    std::sort(xs.begin(), xs.end());
    CHECK(xs == Ints{0, 1, 2, 100, 200, 201, 202, 203, 300, 301});
  }
}

TEST_CASE("InterleaveFiles throws a file's error at its position and goes on with the others", "[data][interleave]") {
  for (int64_t threads : {1, 3}) {
    INFO(threads << " threads");
    auto failing = [](const std::string& file) {
      return Records(file).map([](est::data::Element element) {
        EST_CHECK(element.features.at("x").item<int64_t>() != 201, est::DataError, "record 201 is bad");
        return element;
      });
    };
    auto iterator = Dataset::InterleaveFiles(Files(), failing,
                                             InterleaveOptions().cycle_length(2).block_length(2).num_parallel_calls(threads))
                        .make_iterator();
    Ints before;
    for (int i = 0; i < 5; ++i) before.push_back(iterator->next()->features.at("x").item<int64_t>());
    CHECK(before == Ints{0, 1, 100, 2, 200});
    CHECK_THROWS_WITH(iterator->next(), "record 201 is bad");
    CHECK(Xs(*iterator) == Ints{300, 301});  // file 2 was closed by its error
  }
  CHECK_THROWS_AS(Dataset::InterleaveFiles(Files(), Records, InterleaveOptions().cycle_length(0)), est::DataError);
  CHECK_THROWS_AS(Dataset::InterleaveFiles(Files(), Records, InterleaveOptions().block_length(0)), est::DataError);
  CHECK_THROWS_AS(Dataset::InterleaveFiles(Files(), Records, InterleaveOptions().num_parallel_calls(-3)), est::DataError);
  CHECK_THROWS_AS(Dataset::InterleaveFiles(Files(), nullptr), est::DataError);
}

TEST_CASE("InterleaveFiles skips like next(), before and after reading began", "[data][interleave]") {
  for (int64_t threads : {1, 3}) {
    for (int64_t before : {0, 1, 3}) {
      for (int64_t count : {0, 1, 2, 4, 6, 7, 9, 10, 15}) {
        INFO(threads << " threads, " << before << " next() calls, then skip(" << count << ")");
        const auto options = InterleaveOptions().cycle_length(3).block_length(2).num_parallel_calls(threads);
        auto by_next = Interleaved(options).make_iterator();
        auto by_skip = Interleaved(options).make_iterator();
        for (int64_t i = 0; i < before; ++i) {
          by_next->next();
          by_skip->next();
        }
        int64_t moved = 0;
        while (moved < count && by_next->next()) ++moved;
        CHECK(by_skip->skip(count) == moved);
        CHECK(Xs(*by_skip) == Xs(*by_next));
      }
    }
  }
}
