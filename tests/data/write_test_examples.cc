// Writes tf.train.Example records of known values, built with the generated protobuf classes,
// into a plain and a GZIP TFRecord file (examples.tfrecord, examples_gzip.tfrecord) in the
// directory given as argument, for TensorBoard's own TFRecord reader and protobuf's Python
// runtime to check (tensorboard_reads_examples.py, which lists the same values).
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "data/example/example.pb.h"
#include "data/tfrecord.h"

namespace {

using est::tfexample::Example;
using est::tfexample::Feature;

/// The Feature of `name` in `example`, created empty.
Feature& FeatureOf(Example* example, const std::string& name) {
  return (*example->mutable_features()->mutable_feature())[name];
}

/// The records, the same in both files: every dtype with its edge values; an Example with no
/// features field (zero bytes); one with a 100 KiB bytes value and empty lists; one whose
/// features field is present but holds no feature.
std::vector<Example> Records() {
  using Float = std::numeric_limits<float>;
  std::vector<Example> records(4);
  for (float v : {1.5f, -2.25f, 0.f, -0.f, Float::infinity(), -Float::infinity(), Float::quiet_NaN(),
                  -Float::quiet_NaN(), Float::denorm_min(), Float::max()}) {
    FeatureOf(&records[0], "floats").mutable_float_list()->add_value(v);
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, (int64_t{1} << 40) + 7, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max(), int64_t{1} << 32}) {
    FeatureOf(&records[0], "ints").mutable_int64_list()->add_value(v);
  }
  for (const std::string& v : {std::string(), std::string("\xff\xfe\x00\x80", 4), std::string("h\xc3\xa9llo")}) {
    FeatureOf(&records[0], "bytes").mutable_bytes_list()->add_value(v);
  }
  FeatureOf(&records[0], "label").mutable_int64_list()->add_value(7);

  std::string long_value;
  for (int i = 0; i < 400 * 256; ++i) long_value.push_back(static_cast<char>(i % 256));
  FeatureOf(&records[2], "long").mutable_bytes_list()->add_value(long_value);
  FeatureOf(&records[2], "empty_floats").mutable_float_list();
  FeatureOf(&records[2], "empty_ints").mutable_int64_list();
  FeatureOf(&records[2], "empty_bytes").mutable_bytes_list();

  records[3].mutable_features();
  return records;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_test_examples DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const auto records = Records();
  for (const auto& [name, compression] : {std::pair{"examples.tfrecord", est::data::TFRecordCompression::kNone},
                                          std::pair{"examples_gzip.tfrecord", est::data::TFRecordCompression::kGzip}}) {
    est::data::TFRecordWriter writer((dir / name).string(), compression);
    for (const Example& record : records) writer.write(record.SerializeAsString());
    writer.close();
    std::cout << (dir / name).string() << "\n";
  }
  return 0;
}
