// TFRecord files written by TensorFlow itself (tensorflow_files/, made once with TensorFlow 2.15
// by make_tensorflow_files.py): every record of every file, plain, GZIP and ZLIB, of
// tf.train.Example and tf.train.SequenceExample, read with TFRecordReader and parsed by the
// spec TensorFlow parsed it with, gives exactly what tf.io.parse_single_example and
// parse_single_sequence_example gave (expected.json): the same dtypes, shapes and values, floats
// bit for bit (NaNs, infinities, -0, denormals). TensorFlow's bytes strings are our uint8 rows
// and its VarLen SparseTensors our dense values plus <name>_length, as data/example.h says.

#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "data/example.h"
#include "data/tfrecord.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

namespace fs = std::filesystem;
using est::data::Element;
using est::data::ExampleSpec;
using est::data::FeatureSpec;
using est::data::FeatureType;
using json = nlohmann::json;

namespace {

const fs::path kFilesDir = EST_TENSORFLOW_FILES_DIR;

/// expected.json, read once.
const json& Expected() {
  static const json expected = [] {
    std::ifstream in(kFilesDir / "expected.json");
    REQUIRE(in.is_open());
    return json::parse(in);
  }();
  return expected;
}

/// The FeatureType that expected.json's "float32", "int64" or "bytes" names.
FeatureType TypeOf(const json& name) {
  if (name == "float32") return FeatureType::kFloat32;
  if (name == "int64") return FeatureType::kInt64;
  REQUIRE(name == "bytes");
  return FeatureType::kBytes;
}

/// One bytes value of expected.json: hex, or {"repeat_hex": HEX, "times": N}.
std::string BytesOf(const json& value) {
  const bool repeated = value.is_object();
  const std::string hex = repeated ? value.at("repeat_hex").get<std::string>() : value.get<std::string>();
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  std::string out;
  for (int64_t i = 0, times = repeated ? value.at("times").get<int64_t>() : 1; i < times; ++i) out += bytes;
  return out;
}

/// One float32 of expected.json: a number (exactly a float32's value), or "0x" and its IEEE-754 bits.
float FloatOf(const json& value) {
  if (value.is_number()) return static_cast<float>(value.get<double>());
  const auto bits = static_cast<uint32_t>(std::stoul(value.get<std::string>(), nullptr, 16));
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

/// What our parser gives for TensorFlow's parse {"shape", "values"} of a `type` feature: numbers
/// in TensorFlow's shape; bytes as uint8 rows of one length, in TensorFlow's shape + [length]
/// (TensorFlow's shape alone when there are no values).
at::Tensor ExpectedTensor(FeatureType type, const json& parsed) {
  const auto shape = parsed.at("shape").get<std::vector<int64_t>>();
  const json& values = parsed.at("values");
  if (type == FeatureType::kFloat32) {
    std::vector<float> floats;
    for (const json& v : values) floats.push_back(FloatOf(v));
    return torch::tensor(floats, torch::kFloat).view(shape);
  }
  if (type == FeatureType::kInt64) return torch::tensor(values.get<std::vector<int64_t>>(), torch::kLong).view(shape);
  if (values.empty()) return torch::empty(shape, torch::kUInt8);
  std::vector<at::Tensor> rows;
  for (const json& v : values) {
    const std::string bytes = BytesOf(v);
    rows.push_back(torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8));
    if (!bytes.empty()) std::memcpy(rows.back().data_ptr(), bytes.data(), bytes.size());
  }
  std::vector<int64_t> full = shape;
  full.push_back(rows.front().size(0));
  return torch::stack(rows).view(full);
}

/// Our FeatureSpec for one spec entry of expected.json.
FeatureSpec SpecOf(const json& entry) {
  const FeatureType type = TypeOf(entry.at("type"));
  if (entry.value("var_len", false)) return FeatureSpec::VarLen(type);
  FeatureSpec spec = FeatureSpec::FixedLen(type, entry.at("shape").get<std::vector<int64_t>>());
  if (entry.contains("default")) {
    spec.default_value(ExpectedTensor(type, {{"shape", entry.at("shape")}, {"values", entry.at("default")}}));
  }
  return spec;
}

/// Our ExampleSpec for a spec of expected.json (feature name -> entry).
ExampleSpec SpecsOf(const json& entries) {
  ExampleSpec spec;
  for (const auto& [name, entry] : entries.items()) spec.emplace(name, SpecOf(entry));
  return spec;
}

/// The dtype, the shape and the first values of `tensor` (floats with their bits), for failure messages.
std::string Describe(const at::Tensor& tensor) {
  if (!tensor.defined()) return "undefined";
  std::ostringstream out;
  out << tensor.scalar_type() << " " << tensor.sizes() << ":";
  const at::Tensor head = tensor.flatten().slice(0, 0, 12).contiguous();
  for (int64_t i = 0; i < head.numel(); ++i) {
    if (head.scalar_type() != at::kFloat) {
      out << " " << head[i].item<int64_t>();
      continue;
    }
    const float value = head.data_ptr<float>()[i];
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    out << " " << value << " (0x" << std::hex << bits << std::dec << ")";
  }
  if (tensor.numel() > head.numel()) out << " ...";
  return out.str();
}

/// Whether `a` and `b` have the same dtype, shape and bytes (so NaNs of the same bits are equal).
bool BitwiseEqual(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined() || a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;  // empty: no data pointer
}

/// Checks the tensors of `element` that `spec` gives against TensorFlow's `parsed` ones: each
/// feature (the label feature as the labels), and `<name>_length` of VarLen and sequence
/// features. Returns how many features it checked.
size_t CheckParsed(const json& spec, const json& parsed, const std::string& label_key, bool sequence,
                   const Element& element) {
  size_t checked = 0;
  for (const auto& [name, entry] : spec.items()) {
    const at::Tensor expected = ExpectedTensor(TypeOf(entry.at("type")), parsed.at(name));
    const at::Tensor& got = name == label_key ? element.labels : element.features.at(name);
    INFO("feature '" << name << "': got " << Describe(got) << ", TensorFlow parsed " << Describe(expected));
    CHECK(BitwiseEqual(got, expected));
    checked += name == label_key ? 0 : 1;
    if (sequence || entry.value("var_len", false)) {
      const at::Tensor& length = element.features.at(name + "_length");
      CHECK(BitwiseEqual(length, torch::tensor(parsed.at(name).at("shape").at(0).get<int64_t>(), torch::kLong)));
      ++checked;
    }
  }
  return checked;
}

/// Every record of a TFRecord file.
std::vector<std::string> ReadRecords(const fs::path& path, est::data::TFRecordCompression compression) {
  est::data::TFRecordReader reader(path.string(), est::data::TFRecordReaderOptions().compression(compression));
  std::vector<std::string> records;
  std::string record;
  while (reader.next(&record)) records.push_back(record);
  return records;
}

}  // namespace

TEST_CASE("TFRecord files TensorFlow wrote read and parse to exactly what TensorFlow parsed", "[data][tensorflow]") {
  for (const auto& [name, file] : Expected().at("files").items()) {
    DYNAMIC_SECTION(name) {
      const auto compression = est::data::ParseTFRecordCompression(file.at("compression").get<std::string>());
      const auto records = ReadRecords(kFilesDir / name, compression);
      REQUIRE(records.size() == file.at("records").size());
      const json& spec = file.at("spec");
      const auto label_key = file.at("label_key").get<std::string>();
      const bool sequence = file.at("kind") == "SequenceExample";
      est::data::RecordParser parse;
      if (sequence) {
        parse = est::data::ParseSequenceExample({SpecsOf(spec.at("context")), SpecsOf(spec.at("sequence"))}, label_key);
      } else {
        REQUIRE(file.at("kind") == "Example");
        parse = est::data::ParseExample(SpecsOf(spec), label_key);
      }
      for (size_t i = 0; i < records.size(); ++i) {
        INFO("record " << i << " of " << name);
        const json& parsed = file.at("records").at(i);
        const Element element = parse(records[i]);
        size_t checked = 0;
        if (sequence) {
          checked += CheckParsed(spec.at("context"), parsed.at("context"), label_key, false, element);
          checked += CheckParsed(spec.at("sequence"), parsed.at("sequence"), "", true, element);
        } else {
          checked += CheckParsed(spec, parsed, label_key, false, element);
        }
        CHECK(element.features.size() == checked);  // nothing more than the spec gives
        CHECK(element.labels.defined() == !label_key.empty());
      }
    }
  }
}

TEST_CASE("expected.json describes every TFRecord file TensorFlow wrote", "[data][tensorflow]") {
  std::set<std::string> on_disk, described;
  for (const auto& entry : fs::directory_iterator(kFilesDir)) {
    if (entry.path().extension() == ".tfrecord") on_disk.insert(entry.path().filename().string());
  }
  for (const auto& [name, file] : Expected().at("files").items()) described.insert(name);
  CHECK(on_disk == described);
  CHECK(on_disk.size() == 9);
}
