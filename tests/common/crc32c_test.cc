#include "common/crc32c.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace est;

TEST_CASE("crc32c matches the published check values", "[common]") {
  // RFC 3720 B.4 and the standard "123456789" check value.
  CHECK(crc32c::Value("123456789") == 0xe3069283u);
  CHECK(crc32c::Value(std::string(32, '\0')) == 0x8a9136aau);
  CHECK(crc32c::Value(std::string(32, '\xff')) == 0x62a8ab43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  CHECK(crc32c::Value(ascending) == 0x46dd794eu);
  CHECK(crc32c::Value("") == 0u);
}

TEST_CASE("crc32c extends across split buffers", "[common]") {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  const uint32_t whole = crc32c::Value(data);
  for (size_t split : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    uint32_t part = crc32c::Value(data.data(), split);
    CHECK(crc32c::Extend(part, data.data() + split, data.size() - split) == whole);
  }
}

TEST_CASE("crc32c mask round-trips and changes the value", "[common]") {
  for (uint32_t crc : {0u, 1u, 0xe3069283u, 0xffffffffu}) {
    CHECK(crc32c::Unmask(crc32c::Mask(crc)) == crc);
    CHECK(crc32c::Mask(crc) != crc);
  }
}

TEST_CASE("crc32c of long buffers at every alignment matches a bitwise reference", "[common]") {
  auto reference = [](const std::string& bytes) {
    uint32_t crc = 0xffffffffu;
    for (unsigned char byte : bytes) {
      crc ^= byte;
      for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82f63b78u : 0u);
    }
    return ~crc;
  };
  std::string data;
  // Long enough for several rounds of the hardware path's four 4 KiB streams; lengths below,
  // at and above multiples of its 32-byte round, and tails of every size from 0 to 31 bytes.
  for (int i = 0; i < 80000; ++i) data.push_back(static_cast<char>((i * 2654435761u) >> 13));
  for (size_t start = 0; start < 9; ++start) {
    std::vector<size_t> lengths = {size_t{31},        size_t{32},        size_t{33},        size_t{63},
                                   size_t{767},       size_t{768},       size_t{838},       size_t{1000},
                                   size_t{4 * 4096},  size_t{4 * 4096 + 7}, size_t{4 * 4096 + 800},
                                   size_t{3 * 16384 + 100}, data.size() - 9};
    for (size_t tail = 0; tail < 32; ++tail) lengths.push_back(64 + tail);
    for (size_t length : lengths) {
      const std::string slice = data.substr(start, length);
      CHECK(crc32c::Value(data.data() + start, length) == reference(slice));
    }
  }
}
