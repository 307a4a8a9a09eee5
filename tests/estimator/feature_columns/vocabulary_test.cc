// Vocabulary list and file columns against TensorFlow 2.15's ids (strings and int64,
// default values and out-of-vocabulary buckets, a vocabulary_size shorter than the file,
// "\r\n" line ends, a last line without "\n"), and the files TensorFlow refuses.

#include "estimator/feature_columns/vocabulary.h"

#include <fstream>

#include "common/error.h"
#include "tests/estimator/feature_columns/tensorflow_ids.h"
#include "tests/test_util.h"

using namespace est::feature_columns;
using est::testing::MessageMatches;
using namespace est::feature_columns::tensorflow_ids;

namespace {

std::string WriteVocabularyFile(const std::filesystem::path& dir, const std::string& name,
                                const std::string& contents) {
  const std::string path = (dir / (name + ".txt")).string();
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

CategoricalIds LookUp(const Vocabulary& vocabulary, const std::string& input) {
  return IsStringInput(input) ? vocabulary.ids(StringBatch(input)) : vocabulary.ids(IntBatch(input));
}

}  // namespace

TEST_CASE("A vocabulary list gives TensorFlow's ids for every tabulated case", "[feature_columns]") {
  for (const VocabularyListCase& expected : kVocabularyListCases) {
    INFO(expected.input << ", " << expected.num_oov_buckets << " OOV buckets, default " << expected.default_value);
    const Vocabulary vocabulary =
        expected.strings.empty()
            ? Vocabulary::FromList(expected.input, expected.integers, expected.num_oov_buckets, expected.default_value)
            : Vocabulary::FromList(expected.input, expected.strings, expected.num_oov_buckets, expected.default_value);
    CHECK(IdsToRows(LookUp(vocabulary, expected.input)) == expected.ids);
    CHECK(vocabulary.num_buckets() == 5 + expected.num_oov_buckets);
  }
}

TEST_CASE("A vocabulary file gives TensorFlow's ids for every tabulated case", "[feature_columns]") {
  const std::filesystem::path dir = est::testing::FreshTempDir("vocabulary_file");
  for (const VocabularyFileCase& expected : kVocabularyFileCases) {
    INFO(expected.file << " on " << expected.input << ", vocabulary_size " << expected.vocabulary_size << ", "
                       << expected.num_oov_buckets << " OOV buckets, default " << expected.default_value);
    std::string contents;
    for (const VocabularyFile& file : kVocabularyFiles)
      if (std::string(file.name) == expected.file) contents = file.contents;
    const std::string path = WriteVocabularyFile(dir, expected.file, contents);
    const std::optional<int64_t> size =
        expected.vocabulary_size == 0 ? std::nullopt : std::optional<int64_t>(expected.vocabulary_size);
    const Vocabulary vocabulary =
        Vocabulary::FromFile(expected.input, path, size, expected.num_oov_buckets, expected.default_value,
                             /*integer_keys=*/!IsStringInput(expected.input));
    CHECK(IdsToRows(LookUp(vocabulary, expected.input)) == expected.ids);
  }
}

TEST_CASE("A vocabulary refuses what TensorFlow refuses, naming the column and the line", "[feature_columns]") {
  const std::filesystem::path dir = est::testing::FreshTempDir("vocabulary_errors");
  using Catch::Matchers::Contains;
  CHECK_THROWS_MATCHES(Vocabulary::FromList("city", std::vector<std::string>{"a", "b", "a"}), est::ConfigError,
                       MessageMatches(Contains("'city'") && Contains("repeats the entry 'a'")));
  CHECK_THROWS_AS(Vocabulary::FromList("city", std::vector<std::string>{}), est::ConfigError);
  CHECK_THROWS_AS(Vocabulary::FromList("city", std::vector<std::string>{"a"}, 2, 0), est::ConfigError);
  CHECK_THROWS_AS(Vocabulary::FromList("city", std::vector<std::string>{"a"}, -1), est::ConfigError);
  CHECK_THROWS_MATCHES(Vocabulary::FromFile("city", WriteVocabularyFile(dir, "gap", "a\n\nc\n")), est::ConfigError,
                       MessageMatches(Contains("line 2 is empty")));
  CHECK_THROWS_MATCHES(Vocabulary::FromFile("city", WriteVocabularyFile(dir, "repeat", "a\nb\na\n")),
                       est::ConfigError, MessageMatches(Contains("line 3 repeats the entry 'a'")));
  CHECK_THROWS_MATCHES(Vocabulary::FromFile("city", WriteVocabularyFile(dir, "short", "a\nb\n"), 3),
                       est::ConfigError, MessageMatches(Contains("has only 2 lines")));
  CHECK_THROWS_AS(Vocabulary::FromFile("city", WriteVocabularyFile(dir, "empty", "")), est::ConfigError);
  CHECK_THROWS_AS(Vocabulary::FromFile("city", (dir / "missing.txt").string()), est::ConfigError);
  CHECK_THROWS_MATCHES(Vocabulary::FromFile("n", WriteVocabularyFile(dir, "words", "1\nx\n"), std::nullopt, 0, -1,
                                            /*integer_keys=*/true),
                       est::ConfigError, MessageMatches(Contains("line 2 ('x') is not an int64")));
}

TEST_CASE("A vocabulary reads only vocabulary_size lines, so what follows them is not checked", "[feature_columns]") {
  const std::filesystem::path dir = est::testing::FreshTempDir("vocabulary_prefix");
  const Vocabulary vocabulary = Vocabulary::FromFile("city", WriteVocabularyFile(dir, "prefix", "a\nb\n\na\n"), 2);
  CHECK(vocabulary.vocabulary_size() == 2);
  CHECK(vocabulary.id("b") == 1);
}

TEST_CASE("A vocabulary refuses values of the other kind", "[feature_columns]") {
  CHECK_THROWS_AS(Vocabulary::FromList("city", std::vector<std::string>{"a"}).id(int64_t{1}), est::DataError);
  CHECK_THROWS_AS(Vocabulary::FromList("n", std::vector<int64_t>{1}).id("1"), est::DataError);
}
