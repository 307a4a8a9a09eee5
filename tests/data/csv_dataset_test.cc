// CsvDataset: values, header, selection, labels and defaults; RFC 4180 quoting; several files
// in order and sharded by file; skip() by row ends without converting; errors naming the file,
// the line and the column.

#include <torch/torch.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "data/csv_dataset.h"
#include "tests/data/csv_files.h"
#include "tests/data/test_datasets.h"
#include "tests/test_util.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using Catch::Contains;
using est::data::CsvColumn;
using est::data::CsvDataset;
using est::data::CsvDatasetOptions;
using est::data::Element;
using est::data::FeatureType;
using est::testing::Drain;
using est::testing::FreshTempDir;
using est::testing::MessageMatches;
using est::testing::NumberedCsv;
using est::testing::WriteCsv;
using est::testing::WriteNumberedCsvFiles;
using est::testing::Xs;
using Ints = std::vector<int64_t>;

namespace {

/// The bytes of a uint8 tensor as text.
std::string Text(const at::Tensor& tensor) {
  REQUIRE(tensor.scalar_type() == at::kByte);
  return std::string(static_cast<const char*>(tensor.data_ptr()), static_cast<size_t>(tensor.numel()));
}

/// Every remaining element of `iterator` as its x and its label, in order.
Ints XsAndLabels(est::data::Iterator& iterator) {
  Ints flat;
  while (auto element = iterator.next()) {
    flat.push_back(element->features.at("x").item<int64_t>());
    flat.push_back(element->labels.item<int64_t>());
  }
  return flat;
}

/// Reads every element of a CsvDataset over the one file `path`.
void ReadAll(const std::string& path, const CsvDatasetOptions& options = {}) { Drain(CsvDataset({path}, options)); }

/// Options for files of the int64 columns x and y, both features.
CsvDatasetOptions IntsXY() {
  return CsvDatasetOptions().columns({CsvColumn("x", FeatureType::kInt64), CsvColumn("y", FeatureType::kInt64)});
}

}  // namespace

TEST_CASE("CsvDataset reads each column as a scalar feature of its type", "[data][csv]") {
  const auto dir = FreshTempDir("csv_values");
  const auto path = WriteCsv(dir / "values.csv",
                             "id,score,count\n"
                             "1,0.1,7\n"
                             "2,-1.25e2,-9223372036854775808\n"
                             "3, +3 ,9223372036854775807\n");
  const auto options =
      CsvDatasetOptions().columns({CsvColumn("count", FeatureType::kInt64), CsvColumn("id", FeatureType::kInt64)});
  const auto elements = Drain(CsvDataset({path}, options));
  REQUIRE(elements.size() == 3);
  for (const Element& element : elements) {
    CHECK(element.features.size() == 3);
    CHECK(!element.labels.defined());
    CHECK(element.features.at("id").dim() == 0);
    CHECK(element.features.at("id").scalar_type() == at::kLong);
    CHECK(element.features.at("score").dim() == 0);
    CHECK(element.features.at("score").scalar_type() == at::kFloat);  // not listed: float32
    CHECK(element.features.at("count").scalar_type() == at::kLong);
  }
  CHECK(elements[0].features.at("id").item<int64_t>() == 1);
  CHECK(elements[0].features.at("score").item<float>() == 0.1f);
  CHECK(elements[0].features.at("count").item<int64_t>() == 7);
  CHECK(elements[1].features.at("id").item<int64_t>() == 2);
  CHECK(elements[1].features.at("score").item<float>() == -125.0f);
  CHECK(elements[1].features.at("count").item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(elements[2].features.at("score").item<float>() == 3.0f);
  CHECK(elements[2].features.at("count").item<int64_t>() == std::numeric_limits<int64_t>::max());

  CHECK(CsvDataset({path}).cardinality() == est::data::kUnknownCardinality);
  CHECK(CsvDataset({}).cardinality() == 0);
  CHECK(Drain(CsvDataset({})).empty());
}

TEST_CASE("CsvDataset selects columns by name, takes a label and fills missing fields with defaults",
          "[data][csv]") {
  const auto dir = FreshTempDir("csv_selection");
  const auto path = WriteCsv(dir / "people.csv",
                             "name,age,height,label\n"
                             "ann,31,1.75,1\n"
                             "bob,,NA,0\n");

  SECTION("selected columns, the label, defaults for empty and NA fields") {
    const auto options = CsvDatasetOptions()
                             .columns({CsvColumn("age", FeatureType::kInt64).default_value("-1"),
                                       CsvColumn("label", FeatureType::kInt64),
                                       CsvColumn("height").default_value("0.5")})
                             .select_columns({"height", "age"})
                             .label_column("label")
                             .na_value("NA");
    const auto elements = Drain(CsvDataset({path}, options));
    REQUIRE(elements.size() == 2);
    // "name" holds text but is not selected, so it is never converted.
    CHECK(elements[0].features.size() == 2);
    CHECK(elements[0].features.at("age").item<int64_t>() == 31);
    CHECK(elements[0].features.at("height").item<float>() == 1.75f);
    CHECK(elements[0].labels.dim() == 0);
    CHECK(elements[0].labels.scalar_type() == at::kLong);
    CHECK(elements[0].labels.item<int64_t>() == 1);
    CHECK(elements[1].features.at("age").item<int64_t>() == -1);     // empty
    CHECK(elements[1].features.at("height").item<float>() == 0.5f);  // NA
    CHECK(elements[1].labels.item<int64_t>() == 0);
  }

  SECTION("without select_columns, every column but the label") {
    const auto options = CsvDatasetOptions()
                             .columns({CsvColumn("name", FeatureType::kBytes), CsvColumn("age").default_value("0"),
                                       CsvColumn("height").default_value("2")})
                             .label_column("height")
                             .na_value("NA");
    const auto elements = Drain(CsvDataset({path}, options));
    REQUIRE(elements.size() == 2);
    CHECK(elements[0].features.size() == 3);
    CHECK(Text(elements[0].features.at("name")) == "ann");
    CHECK(Text(elements[1].features.at("name")) == "bob");
    CHECK(elements[1].features.at("age").item<float>() == 0.0f);
    CHECK(elements[0].features.at("label").item<float>() == 1.0f);
    CHECK(elements[0].labels.item<float>() == 1.75f);
    CHECK(elements[1].labels.item<float>() == 2.0f);
  }

  SECTION("a missing field without a default is a DataError naming the place") {
    CHECK_THROWS_MATCHES(ReadAll(path, CsvDatasetOptions().select_columns({"age"})), est::DataError,
                         MessageMatches(Contains("file '" + path + "', line 3, column 2 ('age')") &&
                                        Contains("the field is empty and the column has no default_value")));
    CHECK_THROWS_MATCHES(ReadAll(path, CsvDatasetOptions().select_columns({"height"}).na_value("NA")), est::DataError,
                         MessageMatches(Contains("file '" + path + "', line 3, column 3 ('height')") &&
                                        Contains("the NA value 'NA'")));
  }
}

TEST_CASE("CsvDataset reads quoted fields as RFC 4180 writes them", "[data][csv]") {
  const auto dir = FreshTempDir("csv_quotes");
  const auto path = WriteCsv(dir / "quotes.csv",
                             "id,text\n"
                             "1,\"a,b\"\n"
                             "2,\"say \"\"hi\"\"\"\n"
                             "\"3\",\"two\nlines, and \"\"more\"\"\r\n\"\n"
                             "4,\"\"\n"
                             "5, plain \n");
  const auto options = CsvDatasetOptions().columns(
      {CsvColumn("id", FeatureType::kInt64), CsvColumn("text", FeatureType::kBytes).default_value("(none)")});
  const auto elements = Drain(CsvDataset({path}, options));
  REQUIRE(elements.size() == 5);
  CHECK(Text(elements[0].features.at("text")) == "a,b");
  CHECK(Text(elements[1].features.at("text")) == "say \"hi\"");
  CHECK(elements[2].features.at("id").item<int64_t>() == 3);
  CHECK(Text(elements[2].features.at("text")) == "two\nlines, and \"more\"\r\n");
  CHECK(Text(elements[3].features.at("text")) == "(none)");   // "" is an empty field
  CHECK(Text(elements[4].features.at("text")) == " plain ");  // spaces are kept

  SECTION("lines are counted through quoted line breaks") {
    const auto bad = WriteCsv(dir / "bad.csv", "id,text\n1,\"two\nlines\"\n2,\"three\n\nlines\"\nx,y\n");
    CHECK_THROWS_MATCHES(ReadAll(bad, options), est::DataError,
                         MessageMatches(Contains("file '" + bad + "', line 7, column 1 ('id')") &&
                                        Contains("expected an int64, found 'x'")));
  }

  SECTION("a decoder turns a bytes field into a tensor") {
    int calls = 0;
    const auto count_bytes = [&calls](std::string_view text) {
      ++calls;
      return torch::tensor(static_cast<int64_t>(text.size()));
    };
    const auto decoded = Drain(CsvDataset(
        {path}, CsvDatasetOptions()
                    .columns({CsvColumn("text", FeatureType::kBytes).decoder(count_bytes).default_value("")})
                    .select_columns({"text"})));
    REQUIRE(decoded.size() == 5);
    CHECK(decoded[1].features.at("text").item<int64_t>() == 8);
    CHECK(decoded[3].features.at("text").item<int64_t>() == 0);
    CHECK(calls == 5 + 1);  // and once for the default, checked when the Dataset is made
  }
}

TEST_CASE("CsvDataset reads files without a header, other delimiters, CRLF, blank lines and a BOM",
          "[data][csv]") {
  const auto dir = FreshTempDir("csv_format");
  const auto path = WriteCsv(dir / "plain.csv",
                             "\xEF\xBB\xBF"
                             "1;a b ;2.5\r\n"
                             "\r\n"
                             "2; c;3\n"
                             "\n"
                             "3;\"q;r\";4");  // no line end after the last row
  const auto options = CsvDatasetOptions()
                           .header(false)
                           .field_delim(';')
                           .columns({CsvColumn("n", FeatureType::kInt64), CsvColumn("s", FeatureType::kBytes),
                                     CsvColumn("v")})
                           .label_column("v");
  const auto elements = Drain(CsvDataset({path}, options));
  REQUIRE(elements.size() == 3);
  CHECK(elements[0].features.at("n").item<int64_t>() == 1);
  CHECK(Text(elements[0].features.at("s")) == "a b ");
  CHECK(elements[0].labels.item<float>() == 2.5f);
  CHECK(Text(elements[1].features.at("s")) == " c");
  CHECK(elements[2].features.at("n").item<int64_t>() == 3);
  CHECK(Text(elements[2].features.at("s")) == "q;r");
  CHECK(elements[2].labels.item<float>() == 4.0f);

  // A byte order mark is not part of the first column's name.
  const auto with_bom = WriteCsv(dir / "bom.csv", "\xEF\xBB\xBFx,y\r\n1,2\r\n");
  CHECK(Xs(CsvDataset({with_bom}, IntsXY().select_columns({"x"}))) == Ints{1});
  // Tabs.
  const auto tabs = WriteCsv(dir / "tabs.tsv", "x\ty\n7\t8\n");
  CHECK(Xs(CsvDataset({tabs}, IntsXY().field_delim('\t'))) == Ints{7});
}

TEST_CASE("CsvDataset reads its files in order and auto_shard shards them by file", "[data][csv]") {
  const auto files = WriteNumberedCsvFiles("csv_order", {3, 0, 2});
  auto iterator = NumberedCsv(files).make_iterator();
  CHECK(XsAndLabels(*iterator) == Ints{0, 0, 1, 10, 2, 20, 200, 2000, 201, 2010});

  const auto two = WriteNumberedCsvFiles("csv_shard", {2, 3});
  CHECK(Xs(NumberedCsv(two).auto_shard(2, 1)) == Ints{100, 101, 102});
  CHECK(Xs(NumberedCsv(two).auto_shard(2, 0, est::data::AutoShardPolicy::kFile)) == Ints{0, 1});
  CHECK(Xs(NumberedCsv(files).auto_shard(2, 0)) == Ints{0, 1, 2, 200, 201});
  // The transformations above the source are rebuilt over the sharded file list.
  const auto batches = Drain(NumberedCsv(two).batch(2).auto_shard(2, 1));
  REQUIRE(batches.size() == 2);
  CHECK(est::testing::Values(batches[0].features.at("x")) == Ints{100, 101});
  CHECK(est::testing::Values(batches[0].labels) == Ints{1000, 1010});
}

TEST_CASE("CsvDataset's skip leaves the iterator where as many next() calls do", "[data][csv]") {
  // 12 rows of two lines each, across an empty file; buffers that cut rows and quotes anywhere.
  const auto files = WriteNumberedCsvFiles("csv_skip", {4, 0, 3, 5});
  for (const int64_t buffer_bytes : {1, 2, 7, 1 << 16}) {
    for (int64_t before = 0; before <= 12; ++before) {
      for (int64_t count = 0; count <= 14; ++count) {
        INFO("buffer " << buffer_bytes << ", " << before << " next() calls, then " << count << " rows");
        auto by_skip = NumberedCsv(files, buffer_bytes).make_iterator();
        auto by_next = NumberedCsv(files, buffer_bytes).make_iterator();
        for (int64_t i = 0; i < before; ++i) {
          by_skip->next();
          by_next->next();
        }
        int64_t moved = 0;
        while (moved < count && by_next->next()) ++moved;
        CHECK(by_skip->skip(count) == moved);
        CHECK(XsAndLabels(*by_skip) == XsAndLabels(*by_next));
      }
    }
  }
}

TEST_CASE("CsvDataset's skip converts no fields", "[data][csv]") {
  const auto dir = FreshTempDir("csv_skip_converts_nothing");
  const auto path = WriteCsv(dir / "rows.csv",
                             "x,y,text\n"
                             "1,10,a\n"
                             "not a number,\"also, not\",b\n"
                             "2\n"
                             "3,30,c\n");
  int decoded = 0;
  const auto count_bytes = [&decoded](std::string_view text) {
    ++decoded;
    return torch::tensor(static_cast<int64_t>(text.size()));
  };
  const auto options =
      CsvDatasetOptions().columns({CsvColumn("x", FeatureType::kInt64), CsvColumn("y", FeatureType::kInt64),
                                   CsvColumn("text", FeatureType::kBytes).decoder(count_bytes)});
  auto iterator = CsvDataset({path}, options).make_iterator();
  CHECK(iterator->skip(3) == 3);  // past a row of bad numbers and one of too few fields
  CHECK(decoded == 0);
  auto last = iterator->next();
  REQUIRE(last);
  CHECK(last->features.at("x").item<int64_t>() == 3);
  CHECK(decoded == 1);
  CHECK(!iterator->next());
  // Read, the same rows fail.
  auto reading = CsvDataset({path}, options).make_iterator();
  reading->next();
  CHECK_THROWS_MATCHES(reading->next(), est::DataError,
                       MessageMatches(Contains("line 3, column 1 ('x')") && Contains("found 'not a number'")));
  // Skipping still finds row ends by the quotes, so an unterminated quote is found.
  const auto open_quote = WriteCsv(dir / "open_quote.csv", "x,y\n1,\"10\n2,20\n");
  auto skipping = CsvDataset({open_quote}, IntsXY()).make_iterator();
  CHECK_THROWS_AS(skipping->skip(5), est::DataError);
}

TEST_CASE("CsvDataset's errors name the file, the line and the column", "[data][csv]") {
  const auto dir = FreshTempDir("csv_errors");

  SECTION("a missing file, or a directory, is an IoError when the Dataset is made") {
    const auto missing = (dir / "missing.csv").string();
    CHECK_THROWS_MATCHES(CsvDataset({missing}), est::IoError,
                         MessageMatches(Contains(missing) && Contains("does not exist")));
    CHECK_THROWS_AS(CsvDataset({dir.string()}), est::IoError);
  }

  SECTION("a wrong number of fields") {
    const auto few = WriteCsv(dir / "few.csv", "x,y\r\n1,10\r\n2\r\n");
    CHECK_THROWS_MATCHES(ReadAll(few, IntsXY()), est::DataError,
                         MessageMatches(Contains("file '" + few + "', line 3, column 2 ('y')") &&
                                        Contains("the row has 1 field, expected 2") && Contains("missing")));
    const auto many = WriteCsv(dir / "many.csv", "x,y\n1,10\n2,20,5\n");
    CHECK_THROWS_MATCHES(ReadAll(many, IntsXY()), est::DataError,
                         MessageMatches(Contains("file '" + many + "', line 3, column 3:") &&
                                        Contains("the row has 3 fields, expected 2") && Contains("one too many")));
  }

  SECTION("a field that is not a number of its column's type") {
    const auto letter = WriteCsv(dir / "letter.csv", "x,y\n1,1O\n");
    CHECK_THROWS_MATCHES(ReadAll(letter, IntsXY()), est::DataError,
                         MessageMatches(Contains("file '" + letter + "', line 2, column 2 ('y')") &&
                                        Contains("expected an int64, found '1O'")));
    const auto fraction = WriteCsv(dir / "fraction.csv", "x,y\n1,2.5\n");
    CHECK_THROWS_MATCHES(ReadAll(fraction, IntsXY()), est::DataError,
                         MessageMatches(Contains("line 2, column 2 ('y')") && Contains("found '2.5'")));
    const auto huge = WriteCsv(dir / "huge.csv", "x,y\n1,99999999999999999999\n");
    CHECK_THROWS_MATCHES(ReadAll(huge, IntsXY()), est::DataError, MessageMatches(Contains("(out of range)")));
    const auto dots = WriteCsv(dir / "dots.csv", "v\n1.5.2\n");
    CHECK_THROWS_MATCHES(ReadAll(dots), est::DataError,
                         MessageMatches(Contains("line 2, column 1 ('v')") &&
                                        Contains("expected a float32, found '1.5.2'")));
  }

  SECTION("an unterminated quote, and stray ones") {
    const auto open = WriteCsv(dir / "open.csv", "x,y\n1,10\n2,\"20\n3,30\n");
    auto iterator = CsvDataset({open}, IntsXY()).make_iterator();
    CHECK(iterator->next());
    CHECK_THROWS_MATCHES(iterator->next(), est::DataError,
                         MessageMatches(Contains("file '" + open + "', line 3, column 2 ('y')") &&
                                        Contains("still open at the end of the file")));
    // Once failed, the iterator fails again.
    CHECK_THROWS_AS(iterator->next(), est::DataError);

    const auto inside = WriteCsv(dir / "inside.csv", "x,y\n1,10\n2,2\"0\n");
    CHECK_THROWS_MATCHES(ReadAll(inside, IntsXY()), est::DataError,
                         MessageMatches(Contains("file '" + inside + "', line 3, column 2 ('y')") &&
                                        Contains("a quote inside an unquoted field")));
    const auto after = WriteCsv(dir / "after.csv", "x,y\n\"1\"0,10\n");
    CHECK_THROWS_MATCHES(ReadAll(after, IntsXY()), est::DataError,
                         MessageMatches(Contains("file '" + after + "', line 2, column 1 ('x')") &&
                                        Contains("'0' after the closing quote")));
  }

  SECTION("a header unlike the first file's") {
    const auto first = WriteCsv(dir / "first.csv", "x,y\n1,10\n");
    const auto other = WriteCsv(dir / "other.csv", "x,z\n2,20\n");
    auto iterator = CsvDataset({first, other}, IntsXY().columns({})).make_iterator();
    CHECK(iterator->next());
    CHECK_THROWS_MATCHES(iterator->next(), est::DataError,
                         MessageMatches(Contains("file '" + other + "', line 1") && Contains("'x', 'z'") &&
                                        Contains("differs from 'x', 'y', the header of '" + first + "'")));
    const auto empty = WriteCsv(dir / "empty.csv", "");
    auto then_empty = CsvDataset({first, empty}, IntsXY()).make_iterator();
    CHECK(then_empty->next());
    CHECK_THROWS_MATCHES(then_empty->next(), est::DataError,
                         MessageMatches(Contains("file '" + empty + "' is empty; expected the header line 'x', 'y'")));
    CHECK_THROWS_MATCHES(CsvDataset({empty, first}), est::DataError,
                         MessageMatches(Contains("file '" + empty + "' is empty; expected a header line")));
  }

  SECTION("a header that names a column used twice") {
    const auto twice = WriteCsv(dir / "twice.csv", "x,y,x\n1,2,3\n");
    CHECK_THROWS_MATCHES(CsvDataset({twice}), est::DataError,
                         MessageMatches(Contains("columns 1 and 3 of the header of '" + twice +
                                                 "' are both named 'x'")));
    CHECK_THROWS_MATCHES(CsvDataset({twice}, CsvDatasetOptions().select_columns({"x"})), est::DataError,
                         MessageMatches(Contains("select_columns names column 'x', but the header of '" + twice +
                                                 "' has two: columns 1 and 3")));
    CHECK(Drain(CsvDataset({twice}, CsvDatasetOptions().select_columns({"y"}))).size() == 1);
  }
}

TEST_CASE("CsvDataset refuses options that do not fit its files", "[data][csv]") {
  const auto dir = FreshTempDir("csv_options");
  const auto path = WriteCsv(dir / "xy.csv", "x,y\n1,2\n");
  CHECK_THROWS_MATCHES(CsvDataset({path}, CsvDatasetOptions().select_columns({"z"})), est::ConfigError,
                       MessageMatches(Contains("select_columns names column 'z', which the header of '" + path +
                                               "' lacks; its columns: 'x', 'y'")));
  CHECK_THROWS_MATCHES(CsvDataset({path}, CsvDatasetOptions().label_column("label")), est::ConfigError,
                       MessageMatches(Contains("label_column names column 'label'")));
  CHECK_THROWS_MATCHES(CsvDataset({path}, CsvDatasetOptions().columns({CsvColumn("w")})), est::ConfigError,
                       MessageMatches(Contains("CsvDatasetOptions::columns names column 'w'")));
  CHECK_THROWS_MATCHES(CsvDataset({path}, CsvDatasetOptions().columns({CsvColumn("x"), CsvColumn("x")})),
                       est::ConfigError, MessageMatches(Contains("lists column 'x' twice")));
  CHECK_THROWS_MATCHES(
      CsvDataset({path}, CsvDatasetOptions().columns({CsvColumn("x", FeatureType::kInt64).default_value("0.5")})),
      est::ConfigError, MessageMatches(Contains("column 'x': default_value '0.5': expected an int64")));
  const auto identity = [](std::string_view) { return torch::zeros({1}); };
  CHECK_THROWS_MATCHES(CsvDataset({path}, CsvDatasetOptions().columns({CsvColumn("x").decoder(identity)})),
                       est::ConfigError, MessageMatches(Contains("only a bytes column takes a decoder")));
  CHECK_THROWS_MATCHES(CsvDataset({path}, CsvDatasetOptions().header(false)), est::ConfigError,
                       MessageMatches(Contains("without a header, CsvDatasetOptions::columns must list every column")));
  CHECK_THROWS_AS(CsvDataset({path}, CsvDatasetOptions().field_delim('"')), est::ConfigError);
  CHECK_THROWS_AS(CsvDataset({path}, CsvDatasetOptions().buffer_bytes(0)), est::ConfigError);
}

TEST_CASE("CsvDataset's errors stay short and whole: huge headers, huge fields, control bytes", "[data][csv]") {
  const auto dir = FreshTempDir("csv_hostile");
  SECTION("a header of 300 000 columns is checked in linear time") {
    std::string header;
    for (int i = 0; i < 300000; ++i) header += "c" + std::to_string(i) + ",";
    header += "c7\n";  // the last column repeats column 8's name
    const auto wide = WriteCsv(dir / "wide.csv", header);
    CHECK_THROWS_MATCHES(CsvDataset({wide}), est::DataError,
                         MessageMatches(Catch::Equals("CsvDataset: columns 8 and 300001 of the header of '" + wide +
                                                      "' are both named 'c7'; features need distinct names (leave "
                                                      "one out with select_columns)")));
    CHECK_THROWS_MATCHES(CsvDataset({wide}, CsvDatasetOptions().select_columns({"z"})), est::ConfigError,
                         MessageMatches(Catch::EndsWith("its columns: 'c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', "
                                                        "'c7', 'c8', 'c9' and 299991 more")));
  }
  SECTION("a field of a megabyte is quoted by its start and its size") {
    const std::string field(1 << 20, 'a');
    const auto big = WriteCsv(dir / "big.csv", "x\n" + field + "\n");
    std::string message;
    try {
      ReadAll(big, CsvDatasetOptions().columns({CsvColumn("x", FeatureType::kInt64)}));
    } catch (const est::DataError& error) {
      message = error.what();
    }
    CHECK_THAT(message, Catch::EndsWith("expected an int64, found '" + std::string(64, 'a') + "…' (1048576 bytes)"));
    CHECK(message.size() < 400);
  }
  SECTION("a NUL byte or a newline in a field is escaped, not the end of the message") {
    const auto nul = WriteCsv(dir / "nul.csv", std::string("x\n1\0002\n", 6));
    CHECK_THROWS_MATCHES(ReadAll(nul, CsvDatasetOptions().columns({CsvColumn("x", FeatureType::kInt64)})),
                         est::DataError, MessageMatches(Catch::EndsWith("expected an int64, found '1\\x002'")));
    const auto newline = WriteCsv(dir / "newline.csv", "x\n\"1\n2\"\n");
    CHECK_THROWS_MATCHES(ReadAll(newline, CsvDatasetOptions().columns({CsvColumn("x", FeatureType::kInt64)})),
                         est::DataError, MessageMatches(Catch::EndsWith("expected an int64, found '1\\x0A2'")));
  }
}
