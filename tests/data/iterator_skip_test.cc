// Iterator::skip of every Dataset iterator: the same position and the same elements
// after it as calling next() as many times, while making far fewer elements.

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/tfrecord_dataset.h"
#include "tests/data/csv_files.h"
#include "tests/data/record_files.h"
#include "tests/data/test_datasets.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::Dataset;
using est::data::Element;
using est::data::Iterator;
using est::testing::CountingIterator;
using est::testing::Range;
using est::testing::Values;

namespace {

using Ints = std::vector<int64_t>;

/// Every remaining element of `iterator` as one list: per element its number of "x"
/// values, the values, and its labels' values (or -1), so batch borders count too.
Ints Flatten(Iterator& iterator) {
  Ints flat;
  while (auto element = iterator.next()) {
    const Ints xs = Values(element->features.at("x").reshape({-1}));
    flat.push_back(static_cast<int64_t>(xs.size()));
    flat.insert(flat.end(), xs.begin(), xs.end());
    if (element->labels.defined()) {
      const Ints labels = Values(element->labels.reshape({-1}));
      flat.insert(flat.end(), labels.begin(), labels.end());
    } else {
      flat.push_back(-1);
    }
  }
  return flat;
}

/// Where `count` steps leave a fresh iterator of `build()` after `before` next() calls:
/// the number of elements it moved past and what follows, by next() or by skip().
struct Outcome {
  int64_t moved;
  Ints rest;
  bool operator==(const Outcome& other) const { return moved == other.moved && rest == other.rest; }
};

Outcome ByNext(const std::function<Dataset()>& build, int64_t before, int64_t count) {
  auto iterator = build().make_iterator();
  for (int64_t i = 0; i < before; ++i) iterator->next();
  int64_t moved = 0;
  while (moved < count && iterator->next()) ++moved;
  return {moved, Flatten(*iterator)};
}

Outcome BySkip(const std::function<Dataset()>& build, int64_t before, int64_t count) {
  auto iterator = build().make_iterator();
  for (int64_t i = 0; i < before; ++i) iterator->next();
  const int64_t moved = iterator->skip(count);
  return {moved, Flatten(*iterator)};
}

Element PlusOne(Element element) {
  element.features["x"] = element.features["x"] + 1;
  return element;
}

bool Even(const Element& element) { return element.features.at("x").item<int64_t>() % 2 == 0; }

/// Files of 7, 0, 9, 4 and 3 records, GZIP.
const std::vector<std::string>& RecordFiles() {
  static const auto files = est::testing::WriteNumberedFiles("iterator_skip", {7, 0, 9, 4, 3},
                                                            est::data::TFRecordCompression::kGzip);
  return files;
}

Dataset Records(const std::vector<std::string>& files) {
  return est::data::TFRecordDataset(
      files, est::data::TFRecordDatasetOptions()
                 .reader(est::data::TFRecordReaderOptions().compression(est::data::TFRecordCompression::kGzip))
                 .parser(est::testing::NumberParser));
}

/// CSV files of 7, 0, 9, 4 and 3 rows, each row two lines long (a quoted line break).
const std::vector<std::string>& CsvFiles() {
  static const auto files = est::testing::WriteNumberedCsvFiles("iterator_skip_csv", {7, 0, 9, 4, 3});
  return files;
}

/// The records of RecordFiles as bytes, shuffled, grouped in threes and parsed a group at once by
/// NumberParser, on `threads` threads.
Dataset ParsedBatches(int64_t threads) {
  const auto options = est::data::TFRecordDatasetOptions().reader(
      est::data::TFRecordReaderOptions().compression(est::data::TFRecordCompression::kGzip));
  auto parse = [](const std::vector<std::string_view>& records) {
    std::vector<Element> elements;
    for (std::string_view record : records) elements.push_back(est::testing::NumberParser(record));
    return est::data::BatchElements(elements, /*padded=*/false);
  };
  return est::data::TFRecordDataset(RecordFiles(), options)
      .shuffle(5, 2)
      .parse_batches(3, parse, est::data::ParseBatchesOptions().num_parallel_calls(threads));
}

Dataset InterleavedRecords(int64_t threads) {
  return Dataset::InterleaveFiles(
      RecordFiles(), [](const std::string& file) { return Records({file}); },
      est::data::InterleaveOptions().cycle_length(3).block_length(2).num_parallel_calls(threads));
}

Dataset FilledCache() {
  Dataset cached = Range(23, true).cache();
  est::testing::Drain(cached);
  return cached;
}

}  // namespace

TEST_CASE("Iterator::skip leaves every pipeline where as many next() calls do", "[data]") {
  const std::vector<std::pair<std::string, std::function<Dataset()>>> pipelines = {
      {"FromTensors", [] { return Range(23, true); }},
      {"batch over FromTensors", [] { return Range(23, true).batch(5); }},
      {"batch dropping the remainder", [] { return Range(23).batch(5, true); }},
      {"batch after map", [] { return Range(23, true).map(PlusOne).batch(4); }},
      {"batch after map, dropping the remainder", [] { return Range(23).map(PlusOne).batch(4, true); }},
      {"parallel map", [] { return Range(23, true).map(PlusOne, 3); }},
      {"filter", [] { return Range(23).filter(Even); }},
      {"shuffle", [] { return Range(23, true).shuffle(7, 3); }},
      {"shuffle after filter (unknown cardinality)", [] { return Range(23).filter(Even).shuffle(4, 3); }},
      {"reshuffling shuffle repeated", [] { return Range(23).shuffle(7, 3).repeat(3); }},
      {"same-order shuffle repeated", [] { return Range(10).repeat(3).shuffle(8, 9, false); }},
      {"shuffle of an endless repeat", [] { return Range(23).repeat().shuffle(10, 5).take(120); }},
      {"nested shuffles, repeated, batched", [] { return Range(23).shuffle(5, 1).shuffle(4, 2).repeat(2).batch(3); }},
      {"shard", [] { return Range(23).shard(3, 1); }},
      {"shard of a repeat, batched", [] { return Range(23).repeat(2).shard(4, 3).batch(2); }},
      {"skip then take", [] { return Range(23).skip(4).take(10); }},
      {"take of an endless repeat", [] { return Range(5).repeat().take(33); }},
      {"skip everything", [] { return Range(23).skip(-1); }},
      {"cache being filled", [] { return Range(23, true).cache(); }},
      {"cache filled", FilledCache},
      {"prefetch", [] { return Range(23, true).prefetch(3); }},
      {"prefetch of a shuffled batch", [] { return Range(23).shuffle(6, 4).batch(4).prefetch(2); }},
      {"generator", [] { return Dataset::FromGenerator([] { return std::make_unique<CountingIterator>(0, 23); }); }},
      {"repeat of an empty input", [] { return Range(0).repeat(); }},
      {"repeat three times", [] { return Range(4).repeat(3); }},
      {"TFRecordDataset", [] { return Records(RecordFiles()); }},
      {"TFRecordDataset, sharded by file, shuffled, batched",
       [] { return Records(RecordFiles()).auto_shard(2, 0).shuffle(5, 2).batch(3); }},
      {"CsvDataset", [] { return est::testing::NumberedCsv(CsvFiles()); }},
      {"CsvDataset, sharded by file, shuffled, batched",
       [] { return est::testing::NumberedCsv(CsvFiles(), 5).auto_shard(2, 1).shuffle(5, 2).batch(3); }},
      {"parse_batches of shuffled records", [] { return ParsedBatches(1); }},
      {"parse_batches with threads, repeated", [] { return ParsedBatches(3).repeat(2); }},
      {"InterleaveFiles", [] { return InterleavedRecords(1); }},
      {"InterleaveFiles with threads, repeated", [] { return InterleavedRecords(3).repeat(2); }},
  };
  for (const auto& [name, build] : pipelines) {
    for (const int64_t before : {0, 2}) {
      for (const int64_t count : {0, 1, 2, 5, 13, 21, 22, 23, 24, 40, 100}) {
        INFO(name << ": " << before << " next() calls, then " << count << " elements");
        CHECK(BySkip(build, before, count) == ByNext(build, before, count));
      }
    }
  }
}

TEST_CASE("Iterator::skip makes only the elements it must", "[data]") {
  std::atomic<int64_t> calls{0};
  auto counted = [&calls](Element element) {
    ++calls;
    return element;
  };

  SECTION("map's function is not called on skipped elements") {
    auto iterator = Range(1000).map(counted).batch(10).make_iterator();
    CHECK(iterator->skip(60) == 60);
    CHECK(calls == 0);
    CHECK((Values(iterator->next()->features.at("x")) == Ints{600, 601, 602, 603, 604, 605, 606, 607, 608, 609}));
  }

  SECTION("a reshuffled repeat skips whole passes without making their elements") {
    auto build = [&counted] { return Range(1000).map(counted).shuffle(100, 7).repeat().batch(10); };
    auto skipped = build().make_iterator();
    CHECK(skipped->skip(20'050) == 20'050);  // 200 passes and a half
    const int64_t skip_calls = calls.exchange(0);
    // Only the last pass's elements up to the buffer's far end are made, never a whole pass.
    CHECK(skip_calls <= 600);
    auto replayed = build().make_iterator();
    for (int i = 0; i < 20'050; ++i) replayed->next();
    CHECK(calls == 200'599);  // 200 passes, and half a pass with the buffer's 99 more
    for (int i = 0; i < 3; ++i) CHECK(Values(skipped->next()->features.at("x")) == Values(replayed->next()->features.at("x")));
  }

  SECTION("a shuffle of repeated TFRecord files parses only what is still in its buffer") {
    auto build = [&counted] { return Records(RecordFiles()).map(counted).repeat().shuffle(8, 3).batch(2); };
    auto skipped = build().make_iterator();
    CHECK(skipped->skip(100) == 100);  // 200 records: 8 passes over the 23 records and more
    CHECK(calls.exchange(0) <= 40);  // the buffer's survivors, a few buffer sizes back at most
    auto replayed = build().make_iterator();
    for (int i = 0; i < 100; ++i) replayed->next();
    for (int i = 0; i < 3; ++i) CHECK(Values(skipped->next()->features.at("x")) == Values(replayed->next()->features.at("x")));
  }

  SECTION("a shuffle of an endless repeat makes only what is still in its buffer") {
    auto build = [&counted] { return Range(1000).map(counted).repeat().shuffle(500, 11).batch(10); };
    auto skipped = build().make_iterator();
    CHECK(skipped->skip(20'000) == 20'000);
    const int64_t skip_calls = calls.exchange(0);
    // The buffer's oldest element is a few buffer sizes back; replaying makes 200,499.
    CHECK(skip_calls <= 10'000);
    auto replayed = build().make_iterator();
    for (int i = 0; i < 20'000; ++i) replayed->next();
    for (int i = 0; i < 3; ++i) CHECK(Values(skipped->next()->features.at("x")) == Values(replayed->next()->features.at("x")));
  }
}

TEST_CASE("Dataset::cardinality", "[data]") {
  using est::data::kInfiniteCardinality;
  using est::data::kUnknownCardinality;
  CHECK(Range(23).cardinality() == 23);
  CHECK(Range(23).batch(5).cardinality() == 5);
  CHECK(Range(23).batch(5, true).cardinality() == 4);
  CHECK(Range(23).map(PlusOne).shuffle(4).prefetch(2).cache().cardinality() == 23);
  CHECK(Range(23).filter(Even).cardinality() == kUnknownCardinality);
  CHECK(Range(0).filter(Even).cardinality() == 0);
  CHECK(Range(23).repeat().cardinality() == kInfiniteCardinality);
  CHECK(Range(23).filter(Even).repeat().cardinality() == kInfiniteCardinality);
  CHECK(Range(23).filter(Even).repeat(2).cardinality() == kUnknownCardinality);
  CHECK(Range(23).repeat(3).cardinality() == 69);
  CHECK(Range(0).repeat().cardinality() == 0);
  CHECK(Range(23).repeat(0).cardinality() == 0);
  CHECK(Range(23).repeat().take(7).cardinality() == 7);
  CHECK(Range(23).take(30).cardinality() == 23);
  CHECK(Range(23).take(-1).cardinality() == 23);
  CHECK(Range(23).skip(30).cardinality() == 0);
  CHECK(Range(23).skip(3).cardinality() == 20);
  CHECK(Range(23).skip(-1).cardinality() == 0);
  CHECK(Range(23).repeat().skip(-1).cardinality() == kUnknownCardinality);
  CHECK(Range(23).shard(3, 1).cardinality() == 8);
  CHECK(Range(23).shard(3, 2).cardinality() == 7);
  CHECK(Range(1).shard(3, 2).cardinality() == 0);
  CHECK(Dataset::FromGenerator([] { return std::make_unique<CountingIterator>(0, 3); }).cardinality() ==
        kUnknownCardinality);
  // The numbers agree with iterating.
  for (const Dataset& dataset : {Range(23).batch(5), Range(23).shard(4, 3).repeat(2).batch(3, true)})
    CHECK(static_cast<int64_t>(est::testing::Drain(dataset).size()) == dataset.cardinality());
}
