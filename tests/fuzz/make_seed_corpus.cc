/// Writes the seed corpora of tests/fuzz/corpus/ with the project's own writers:
/// `make_seed_corpus <dir>` fills <dir>/<harness>/ for every harness. The corpora are kept
/// in the repository; run this again after a format changes.

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/file_util.h"
#include "data/example/example.pb.h"
#include "data/tfrecord.h"
#include "estimator/summary/summary_writer.h"
#include "serving/proto/kserve_v2.pb.h"
#include "serving/proto/tf_serving.pb.h"
#include "tests/fuzz/fuzz_files.h"

namespace {

namespace fs = std::filesystem;

void Write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  est::fuzz::WriteBytes((dir / name).string(), bytes);
}

std::string LittleEndian16(size_t value) {
  return {static_cast<char>(value & 0xff), static_cast<char>((value >> 8) & 0xff)};
}

std::string BigEndian32(uint32_t value) {
  return {static_cast<char>(value >> 24), static_cast<char>(value >> 16), static_cast<char>(value >> 8),
          static_cast<char>(value)};
}

/// An IDX file of `type_code` and `dims` followed by `data`.
std::string Idx(uint8_t type_code, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string bytes = {0, 0, static_cast<char>(type_code), static_cast<char>(dims.size())};
  for (uint32_t dim : dims) bytes += BigEndian32(dim);
  return bytes + data;
}

/// The checkpoint harness's input for a checkpoint written by WriteCheckpoint.
std::string CheckpointInput(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                            const std::map<std::string, std::string>& blobs, uint8_t flags) {
  const std::string prefix = est::fuzz::ScratchDir() + "/model.ckpt-7";
  est::checkpoint::WriteCheckpoint(prefix, tensors, blobs, 7);
  const std::string index = est::ReadFile(est::checkpoint::IndexPath(prefix));
  const std::string data = est::ReadFile(est::checkpoint::DataPath(prefix));
  est::checkpoint::RemoveCheckpointFiles(prefix);
  return std::string(1, static_cast<char>(flags)) + LittleEndian16(index.size()) + index + data;
}

void WriteCheckpointSeeds(const fs::path& dir) {
  const std::vector<std::pair<std::string, at::Tensor>> tensors = {
      {"dense/weight", at::arange(6, at::kFloat).reshape({2, 3})},
      {"dense/bias", at::tensor({0.5, -1.5}, at::kDouble)},
      {"global_step", at::tensor({int64_t{42}})},
      {"mask", at::arange(3).remainder(2).eq(0)},
      {"empty", at::zeros({0, 3}, at::kHalf)},
      {"scalar", at::tensor(3, at::kInt).reshape({})}};
  const std::map<std::string, std::string> blobs = {{"optimizer/sgd", "state"}, {"input_position", ""}};
  Write(dir, "tensors_and_blobs", CheckpointInput(tensors, blobs, 0));
  Write(dir, "tensors_and_blobs_repaired", CheckpointInput(tensors, blobs, 3));
  Write(dir, "one_tensor", CheckpointInput({{"w", at::ones({4}, at::kByte)}}, {}, 1));
  Write(dir, "empty_checkpoint", CheckpointInput({}, {}, 0));
}

void WriteIdxSeeds(const fs::path& dir) {
  const std::string images = Idx(0x08, {2, 2, 3}, std::string("\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xff", 12));
  const std::string labels = Idx(0x08, {2}, std::string("\x01\x09", 2));
  Write(dir, "uint8_images", std::string(1, '\0') + images);
  Write(dir, "float32", std::string(1, '\0') + Idx(0x0D, {2}, BigEndian32(0x3f800000) + BigEndian32(0xc0000000)));
  Write(dir, "int16_gzip", std::string(1, '\2') + Idx(0x0B, {3}, std::string("\x00\x01\xff\xff\x12\x34", 6)));
  Write(dir, "float64", std::string(1, '\0') + Idx(0x0E, {1}, std::string("\x40\x09\x21\xfb\x54\x44\x2d\x18", 8)));
  Write(dir, "int32_int8", std::string(1, '\0') + Idx(0x0C, {1, 1}, BigEndian32(7)) + Idx(0x09, {1}, "\x80"));
  Write(dir, "empty_dims", std::string(1, '\0') + Idx(0x08, {0, 28, 28}, ""));
  Write(dir, "mnist_pair", std::string(1, '\1') + LittleEndian16(images.size()) + images + labels);
}

/// A TFRecord file of `records` written by TFRecordWriter, behind the harness's flags byte.
std::string TFRecordInput(uint8_t flags, const std::vector<std::string>& records,
                          est::data::TFRecordCompression compression) {
  const std::string path = est::fuzz::ScratchDir() + "/seed.tfrecord";
  fs::remove(path);
  est::data::TFRecordWriter writer(path, compression);
  for (const auto& record : records) writer.write(record);
  writer.close();
  return std::string(1, static_cast<char>(flags)) + est::ReadFile(path);
}

void WriteTFRecordSeeds(const fs::path& dir) {
  using est::data::TFRecordCompression;
  const std::vector<std::string> records = {"", "a", std::string(300, 'r'), "tf.train.Example bytes"};
  Write(dir, "plain", TFRecordInput(0, records, TFRecordCompression::kNone));
  Write(dir, "gzip", TFRecordInput(1, records, TFRecordCompression::kGzip));
  Write(dir, "zlib_small_buffer", TFRecordInput(2 | 16, records, TFRecordCompression::kZlib));
  std::string corrupt = TFRecordInput(4, records, TFRecordCompression::kNone);
  corrupt[1 + 16 + 12] ^= 0x40;  // the data of record 1
  Write(dir, "corrupt_skipped", corrupt);
  const std::string plain = TFRecordInput(8, records, TFRecordCompression::kNone);
  Write(dir, "cut_short_unchecked", plain.substr(0, plain.size() - 9));
  Write(dir, "empty", std::string(1, '\0'));
}

void WriteExampleSeeds(const fs::path& dir) {
  est::tfexample::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  for (float value : {1.5f, -2.f, 0.f}) features["f"].mutable_float_list()->add_value(value);
  for (int64_t value : {int64_t{3}, int64_t{-1}, int64_t{1} << 40}) features["i"].mutable_int64_list()->add_value(value);
  for (const char* value : {"a", "b"}) features["b"].mutable_bytes_list()->add_value(value);
  features["unused"].mutable_bytes_list()->add_value("not in the spec");
  Write(dir, "example", example.SerializeAsString());
  features.erase("b");
  features["f"].mutable_int64_list()->add_value(1);  // a kind other than the spec's
  Write(dir, "wrong_kind", example.SerializeAsString());
  Write(dir, "empty", "");
  est::tfexample::SequenceExample sequence;
  (*sequence.mutable_context()->mutable_feature())["c"].mutable_int64_list()->add_value(7);
  auto& steps = (*sequence.mutable_feature_lists()->mutable_feature_list())["s"];
  for (int step = 0; step < 3; ++step) {
    auto* values = steps.add_feature()->mutable_float_list();
    values->add_value(static_cast<float>(step));
    values->add_value(0.5f);
  }
  Write(dir, "sequence_example", sequence.SerializeAsString());
}

void WriteTfConfigSeeds(const fs::path& dir) {
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"workers", R"({"cluster": {"worker": ["localhost:12345", "localhost:23456"]}, "task": {"type": "worker", "index": 1}})"},
      {"chief_evaluator", R"({"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"], "evaluator": ["host3:2222"]}, "task": {"type": "evaluator", "index": 0}})"},
      {"chief", R"({"cluster": {"chief": ["[::1]:2222"], "worker": ["127.0.0.1:2223"]}, "task": {"type": "chief", "index": "0"}, "rpc_layer": "grpc"})"},
      {"ps", R"({"cluster": {"worker": ["a:1"], "ps": ["b:2"]}, "task": {"type": "ps", "index": 0.0}})"},
      {"evaluator_outside", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator", "index": 0}})"},
      {"local", "{}"},
      {"bad_index", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1e300}})"},
      {"bad_address", R"({"cluster": {"worker": ["a:99999", "b"]}, "task": {"type": "worker", "index": 0}})"},
      {"bad_json", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", )"}};
  for (const auto& [name, text] : configs) Write(dir, name, text);
}

void WriteEventSeeds(const fs::path& dir) {
  const std::string logdir = est::fuzz::ScratchDir() + "/events";
  std::string path;
  {
    est::SummaryWriter writer(logdir);
    path = writer.path();
    writer.add_session_log(est::SessionStatus::kStart, 0);
    writer.add_scalar("loss", 2.5, 0);
    writer.add_scalars({{"accuracy", 0.9}, {"loss", 0.25}, {"global_step/sec", 137.1}}, 300);
    writer.add_session_log(est::SessionStatus::kCheckpoint, 300, "/tmp/model/model.ckpt-300");
  }
  const std::string events = est::ReadFile(path);
  fs::remove_all(logdir);
  Write(dir, "scalars_and_session_logs", events);
  Write(dir, "truncated_last_record", events.substr(0, events.size() - 7));
  Write(dir, "empty", "");
}

void WriteRoundTripSeeds(const fs::path& dir) {
  // FuzzedDataProvider takes integers from the end of the input and strings and floating
  // point numbers from its start, so any bytes are a valid input; these are a few shapes.
  Write(dir, "scalar", std::string("loss\\\x00\x00\x00\x00\x00\x00\x04\x40", 12) + std::string(9, '\0'));
  Write(dir, "scalars", std::string("accuracy\\loss\\step/sec\\", 23) + std::string(24, '\x3f') + "\x03\x01");
  Write(dir, "session_log", std::string("/tmp/model.ckpt-1", 17) + std::string(10, '\x02'));
}

/// A request of each protocol behind the harness's selector byte (even: KServe v2, odd: TF
/// Serving), as their clients send them.
void WriteServingRequestSeeds(const fs::path& dir) {
  est::serving::v2::ModelInferRequest infer;
  infer.set_model_name("regression");
  auto* input = infer.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(2);
  input->add_shape(3);
  const float values[6] = {0.5f, -1.f, 2.f, 0.f, 3.25f, -0.125f};
  infer.add_raw_input_contents(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  infer.add_outputs()->set_name("y");
  Write(dir, "infer_raw", std::string(1, '\0') + infer.SerializeAsString());
  infer.clear_raw_input_contents();
  for (float value : values) input->mutable_contents()->add_fp32_contents(value);
  input->set_datatype("FP32");
  Write(dir, "infer_typed", std::string(1, '\2') + infer.SerializeAsString());
  input->set_datatype("BOOL");
  input->clear_contents();
  for (int i = 0; i < 6; ++i) input->mutable_contents()->add_bool_contents(i % 2 == 0);
  Write(dir, "infer_bool", std::string(1, '\4') + infer.SerializeAsString());
  // Serialized records (BYTES): raw, each a 4-byte little-endian length and its bytes; then typed.
  const std::string records[2] = {std::string("\x0a\x00", 2), "\x0a\x0c\x0a\x0a\x0a\x01x\x12\x05\x1a\x03\x0a\x01\x01"};
  input->clear_contents();
  input->set_name("examples");
  input->set_datatype("BYTES");
  input->clear_shape();
  input->add_shape(2);
  std::string raw;
  for (const std::string& record : records) {
    const uint32_t length = static_cast<uint32_t>(record.size());
    for (int byte = 0; byte < 4; ++byte) raw.push_back(static_cast<char>(length >> (8 * byte)));
    raw += record;
  }
  infer.add_raw_input_contents(raw);
  Write(dir, "infer_bytes_raw", std::string(1, '\6') + infer.SerializeAsString());
  infer.clear_raw_input_contents();
  for (const std::string& record : records) input->mutable_contents()->add_bytes_contents(record);
  Write(dir, "infer_bytes_typed", std::string(1, '\10') + infer.SerializeAsString());

  est::serving::tf::PredictRequest predict;
  predict.mutable_model_spec()->set_name("regression");
  est::serving::tf::TensorProto& x = (*predict.mutable_inputs())["x"];
  x.set_dtype(est::serving::tf::DT_FLOAT);
  x.mutable_tensor_shape()->add_dim()->set_size(2);
  x.mutable_tensor_shape()->add_dim()->set_size(3);
  x.set_tensor_content(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  Write(dir, "predict_content", std::string(1, '\1') + predict.SerializeAsString());
  x.clear_tensor_content();
  x.add_float_val(1.5f);  // repeated for every element, as TensorFlow reads it
  Write(dir, "predict_broadcast", std::string(1, '\3') + predict.SerializeAsString());
  x.clear_float_val();
  x.set_dtype(est::serving::tf::DT_HALF);
  x.add_half_val(0x3c00);  // 1.0 in float16
  Write(dir, "predict_half", std::string(1, '\5') + predict.SerializeAsString());
  predict.mutable_inputs()->clear();
  est::serving::tf::TensorProto& examples = (*predict.mutable_inputs())["examples"];
  examples.set_dtype(est::serving::tf::DT_STRING);
  examples.mutable_tensor_shape()->add_dim()->set_size(2);
  for (const std::string& record : records) examples.add_string_val(record);
  Write(dir, "predict_string", std::string(1, '\7') + predict.SerializeAsString());
}

/// The REST APIs' bodies (rest_request_fuzzer): KServe v2 infer bodies, JSON and with binary
/// data; TensorFlow Serving :predict bodies in the row and columnar formats, and records as b64;
/// a :classify body of examples with a context.
void WriteRestRequestSeeds(const fs::path& dir) {
  Write(dir, "kserve_json",
        std::string(1, '\0') + R"({"id":"1","inputs":[{"name":"x","shape":[2,3],"datatype":"FP32",)"
                               R"("data":[[0.5,-1,2],[0,3.25,-0.125]]}],"outputs":[{"name":"y"}]})");
  Write(dir, "kserve_bool",
        std::string(1, '\0') + R"({"inputs":[{"name":"b","shape":[3],"datatype":"BOOL","data":[true,false,1]}],)"
                               R"("parameters":{"binary_data_output":true}})");
  Write(dir, "kserve_bytes",
        std::string(1, '\0') + R"({"inputs":[{"name":"examples","shape":[2],"datatype":"BYTES","data":["a","bc"]}]})");
  const std::string json = R"({"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32",)"
                           R"("parameters":{"binary_data_size":8}}],"outputs":[{"name":"y","parameters":{"binary_data":true}}]})";
  const float values[2] = {1.5f, -2.f};
  std::string binary = std::string(1, '\2');
  binary.push_back(static_cast<char>(json.size() & 0xff));
  binary.push_back(static_cast<char>(json.size() >> 8));
  Write(dir, "kserve_binary", binary + json + std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  Write(dir, "tf_row", std::string(1, '\1') + R"({"instances":[{"x":[1,2,3],"ids":[4,5]},{"x":[0.5,0,-1],"ids":[0,1]}]})");
  Write(dir, "tf_columnar",
        std::string(1, '\1') + R"({"signature_name":"serving_default","inputs":{"x":[[1,2,3]],"ids":[[7,8]]}})");
  Write(dir, "tf_records", std::string(1, '\3') + R"({"instances":[{"b64":"CgA="},"raw"]})");
  Write(dir, "tf_examples",
        std::string(1, '\5') + R"({"context":{"ids":[4,5]},"examples":[{"x":[1.0,2.5,-3e0],"w":"a"},)"
                               R"({"x":[0.5,0.0,1.0],"img":{"b64":"AAH/"}}]})");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seed_corpus <corpus dir>\n";
    return 2;
  }
  const fs::path root = argv[1];
  WriteCheckpointSeeds(root / "checkpoint_reader_fuzzer");
  WriteIdxSeeds(root / "idx_fuzzer");
  WriteTFRecordSeeds(root / "tfrecord_fuzzer");
  WriteExampleSeeds(root / "example_parser_fuzzer");
  WriteTfConfigSeeds(root / "tf_config_fuzzer");
  WriteEventSeeds(root / "event_reader_fuzzer");
  WriteRoundTripSeeds(root / "event_roundtrip_fuzzer");
  WriteServingRequestSeeds(root / "serving_request_fuzzer");
  WriteRestRequestSeeds(root / "rest_request_fuzzer");
  return 0;
}
