// checkpoint_fixture: the C++ side of tensorflow_reads_checkpoints_test.py.
//   checkpoint_fixture write PREFIX EXPECTED_JSON   writes a checkpoint of every dtype, shape
//                                                   and some blobs with WriteCheckpoint, and
//                                                   what it holds as JSON
//   checkpoint_fixture dump PREFIX OUT_JSON         writes what CheckpointReader reads from any
//                                                   checkpoint, as JSON
// The JSON: {"global_step": N, "tensors": {name: {"dtype": TensorFlow's dtype name, "shape":
// [...], "hex": little-endian row-major bytes}}, "blobs": {name: hex}}.

#include <ATen/ATen.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/error.h"

namespace {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

std::string Hex(const void* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string hex;
  hex.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex;
}

/// TensorFlow's name of the dtype (tf.as_dtype(name)).
std::string TensorFlowDtype(at::ScalarType type) {
  static const std::map<at::ScalarType, std::string> kNames = {
      {at::kFloat, "float32"}, {at::kDouble, "float64"},    {at::kHalf, "float16"},
      {at::kBFloat16, "bfloat16"}, {at::kChar, "int8"},     {at::kShort, "int16"},
      {at::kInt, "int32"},     {at::kLong, "int64"},        {at::kByte, "uint8"},
      {at::kBool, "bool"},     {at::kComplexFloat, "complex64"}, {at::kComplexDouble, "complex128"}};
  return kNames.at(type);
}

nlohmann::json Describe(const at::Tensor& tensor) {
  const at::Tensor stored = tensor.detach().cpu().resolve_conj().contiguous();
  return {{"dtype", TensorFlowDtype(stored.scalar_type())},
          {"shape", stored.sizes().vec()},
          {"hex", Hex(stored.data_ptr(), stored.nbytes())}};
}

NamedTensors EveryKindOfTensor() {
  at::manual_seed(11);
  return {
      {"float32", at::randn({3, 4})},
      {"float64", at::randn({2, 5}, at::kDouble)},
      {"float16", at::randn({7}).to(at::kHalf)},
      {"bfloat16", at::randn({2, 3}).to(at::kBFloat16)},
      {"int8", at::arange(-128, 128, at::kLong).to(at::kChar)},
      {"int16", at::arange(-300, 300, 7, at::kLong).to(at::kShort)},
      {"int32", at::arange(-6, 6, at::kInt).reshape({3, 4})},
      {"int64", at::arange(10, at::kLong) + (int64_t{1} << 40)},
      {"uint8", at::arange(256, at::kLong).to(at::kByte)},
      {"bool", at::arange(9).remainder(3).eq(0).reshape({3, 3})},
      {"complex64", at::randn({4}, at::kComplexFloat)},
      {"complex128", at::randn({2, 2}, at::kComplexDouble)},
      {"scalar", at::scalar_tensor(2.5, at::kDouble)},
      {"empty", at::empty({0, 3})},
      {"large", at::randn({300, 300})},  // 360 KB
      {"transposed", at::arange(12, at::kFloat).reshape({3, 4}).t()},
      {"cnn/conv1.weight", at::randn({4, 1, 3, 3})},
  };
}

std::map<std::string, std::string> SomeBlobs() {
  return {{"optimizer/adam", std::string("\0\x01\xff binary state", 16)},
          {"empty", ""},
          {"input_position/worker_0", "epoch=2;offset=640"},
          {"long", std::string(70000, 'x')}};
}

void WriteJson(const std::string& path, const nlohmann::json& json) {
  std::ofstream out(path);
  out << json.dump(1) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

void Write(const std::string& prefix, const std::string& json_path) {
  constexpr int64_t kStep = 938;
  const NamedTensors tensors = EveryKindOfTensor();
  const auto blobs = SomeBlobs();
  est::checkpoint::WriteCheckpoint(prefix, tensors, blobs, kStep);
  nlohmann::json json = {{"global_step", kStep}, {"tensors", nlohmann::json::object()}};
  for (const auto& [name, tensor] : tensors) json["tensors"][name] = Describe(tensor);
  json["tensors"]["global_step"] = Describe(at::scalar_tensor(kStep, at::kLong));
  for (const auto& [name, bytes] : blobs) json["blobs"][name] = Hex(bytes.data(), bytes.size());
  WriteJson(json_path, json);
}

void Dump(const std::string& prefix, const std::string& json_path) {
  const est::checkpoint::CheckpointReader reader(prefix);
  reader.verify();
  nlohmann::json json = {{"global_step", reader.global_step()}, {"tensors", nlohmann::json::object()},
                         {"blobs", nlohmann::json::object()}};
  for (const auto& name : reader.tensor_names()) json["tensors"][name] = Describe(reader.tensor(name));
  for (const auto& name : reader.blob_names()) {
    const std::string bytes = *reader.blob(name);
    json["blobs"][name] = Hex(bytes.data(), bytes.size());
  }
  WriteJson(json_path, json);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 3 && args[0] == "write") {
      Write(args[1], args[2]);
    } else if (args.size() == 3 && args[0] == "dump") {
      Dump(args[1], args[2]);
    } else {
      std::cerr << "usage: checkpoint_fixture write|dump PREFIX JSON\n";
      return 2;
    }
  } catch (const std::exception& error) {
    std::cerr << "checkpoint_fixture: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
