// The framing of c10d's store requests of every LibTorch from 1.13 to 2.11, as the chief's
// store front scans them.

#include <torch/version.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "distribute/rendezvous/store_request.h"

using namespace est::distribute;
using Status = StoreRequestScan::Status;
using Type = StoreRequestType;

namespace {

std::string Uint64(uint64_t value) { return std::string(reinterpret_cast<const char*>(&value), sizeof(value)); }
std::string Uint32(uint32_t value) { return std::string(reinterpret_cast<const char*>(&value), sizeof(value)); }
std::string Bytes(const std::string& text) { return Uint64(text.size()) + text; }
std::string Keys(const std::vector<std::string>& keys) {
  std::string bytes = Uint64(keys.size());
  for (const std::string& key : keys) bytes += Bytes(key);
  return bytes;
}
std::string Byte(uint8_t type) { return std::string(1, static_cast<char>(type)); }

// The versions whose protocols differ, and two that share another's.
const std::vector<std::pair<int, int>> kVersions = {{1, 13}, {2, 0}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {2, 5},
                                                    {2, 7}, {2, 8}, {2, 9}, {2, 10}, {2, 11}, {3, 0}};

// The arguments of a sample request of each type, as c10d's client encodes them.
std::string SampleArguments(Type type) {
  switch (type) {
    case Type::kValidate: return Uint32(kStoreValidationMagic);
    case Type::kSet: return Bytes("/k") + Bytes(std::string("v\0w", 3));
    case Type::kCompareSet: return Bytes("/k") + Bytes("old") + Bytes("new");
    case Type::kGet: return Bytes("/k");
    case Type::kAdd: return Bytes("/n") + Uint64(static_cast<uint64_t>(-5));
    case Type::kCheck: return Keys({"/a", "/bb", ""});
    case Type::kWait: return Keys({});
    case Type::kGetNumKeys: return "";
    case Type::kWatchKey: return Bytes("/w");
    case Type::kDeleteKey: return Bytes("/k");
    case Type::kAppend: return Bytes("/log") + Bytes("line");
    case Type::kMultiGet: return Keys({"/a", "/b"});
    case Type::kMultiSet: return Uint64(2) + Bytes("/a") + Bytes("1") + Bytes("/b") + Bytes("");
    case Type::kCancelWait: return "";
    case Type::kPing: return Uint32(4242);
    case Type::kQueuePush: return Bytes("/q") + Bytes("item");
    case Type::kQueuePop: return Bytes("/q");
    case Type::kQueueLen: return Bytes("/q");
    case Type::kListKeys: return "";
  }
  return "";
}

StoreRequestScan Scan(const StoreProtocol& protocol, const std::string& bytes, bool first = false) {
  return ScanStoreRequest(protocol, bytes.data(), bytes.size(), first);
}

}  // namespace

TEST_CASE("StoreProtocol numbers each LibTorch's request types as its c10d does", "[distribute]") {
  // 1.13 and 2.0: watch_key at 7, nine types.
  const StoreProtocol& v1_13 = StoreProtocol::OfLibTorch(1, 13);
  CHECK(&StoreProtocol::OfLibTorch(2, 0) == &v1_13);
  CHECK(v1_13.types.size() == 9);
  CHECK(v1_13.byte(Type::kSet) == 0);
  CHECK(v1_13.byte(Type::kGet) == 2);
  CHECK(v1_13.byte(Type::kGetNumKeys) == 6);
  CHECK(v1_13.byte(Type::kWatchKey) == 7);
  CHECK(v1_13.byte(Type::kDeleteKey) == 8);
  CHECK_FALSE(v1_13.validate_first);
  CHECK_FALSE(v1_13.has(Type::kAppend));
  CHECK_THROWS_AS(v1_13.byte(Type::kValidate), est::InternalError);
  // 2.1: watch_key gone, delete_key at 7, cancel_wait at 11.
  const StoreProtocol& v2_1 = StoreProtocol::OfLibTorch(2, 1);
  CHECK(v2_1.types.size() == 12);
  CHECK(v2_1.byte(Type::kDeleteKey) == 7);
  CHECK(v2_1.byte(Type::kMultiSet) == 10);
  CHECK(v2_1.byte(Type::kCancelWait) == 11);
  CHECK_FALSE(v2_1.has(Type::kWatchKey));
  // 2.2: validate at 0 and first, the rest one up.
  const StoreProtocol& v2_2 = StoreProtocol::OfLibTorch(2, 2);
  CHECK(&StoreProtocol::OfLibTorch(2, 3) == &v2_2);
  CHECK(v2_2.validate_first);
  CHECK(v2_2.byte(Type::kValidate) == 0);
  CHECK(v2_2.byte(Type::kSet) == 1);
  CHECK(v2_2.byte(Type::kGetNumKeys) == 7);
  CHECK(v2_2.byte(Type::kCancelWait) == 12);
  CHECK(v2_2.max_key_bytes == 65536);
  // 2.4: the same types; libuv's server and its limits.
  const StoreProtocol& v2_4 = StoreProtocol::OfLibTorch(2, 4);
  CHECK((v2_4.types == v2_2.types));  // as a bool: Catch would print the vectors
  CHECK(v2_4.max_key_bytes == 8192);
  CHECK(v2_4.max_value_bytes == 8388608);
  // 2.5: ping; 2.8: the queues; 2.10: list_keys.
  CHECK(StoreProtocol::OfLibTorch(2, 7).byte(Type::kPing) == 13);
  CHECK_FALSE(StoreProtocol::OfLibTorch(2, 7).has(Type::kQueuePush));
  const StoreProtocol& v2_9 = StoreProtocol::OfLibTorch(2, 9);
  CHECK(v2_9.byte(Type::kQueuePush) == 14);
  CHECK(v2_9.byte(Type::kQueuePop) == 15);
  CHECK(v2_9.byte(Type::kQueueLen) == 16);
  const StoreProtocol& v2_11 = StoreProtocol::OfLibTorch(2, 11);
  CHECK(v2_11.byte(Type::kListKeys) == 17);
  CHECK(v2_11.types.size() == 18);
  CHECK(&StoreProtocol::OfLibTorch(3, 0) == &v2_11);
  // This build's.
  CHECK(&StoreProtocol::OfThisBuild() == &StoreProtocol::OfLibTorch(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
}

TEST_CASE("ScanStoreRequest finds where each request type of every protocol but watch_key ends", "[distribute]") {
  for (const auto& [major, minor] : kVersions) {
    const StoreProtocol& protocol = StoreProtocol::OfLibTorch(major, minor);
    for (size_t byte = 0; byte < protocol.types.size(); ++byte) {
      const Type type = protocol.types[byte];
      if (type == Type::kWatchKey) continue;
      INFO(protocol.name << ": " << StoreRequestTypeName(type) << " (type " << byte << ")");
      const bool first = type == Type::kValidate;
      const std::string request = Byte(static_cast<uint8_t>(byte)) + SampleArguments(type);
      const StoreRequestScan whole = Scan(protocol, request, first);
      CHECK(whole.status == Status::kComplete);
      CHECK(whole.length == request.size());
      // Followed by the next request: the same length.
      const StoreRequestScan followed =
          Scan(protocol, request + Byte(protocol.byte(Type::kGetNumKeys)) + "garbage", first);
      CHECK(followed.status == Status::kComplete);
      CHECK(followed.length == request.size());
      // Cut anywhere: the valid beginning of a request.
      for (size_t cut = 0; cut < request.size(); ++cut) {
        INFO("cut at " << cut);
        CHECK(Scan(protocol, request.substr(0, cut), first).status == Status::kIncomplete);
      }
    }
  }
}

TEST_CASE("ScanStoreRequest refuses watch_key, unknown types, and lengths beyond its limits as soon as they arrive",
          "[distribute]") {
  struct Case {
    std::string bytes;
    std::string error;
  };
  const StoreProtocol& v1_13 = StoreProtocol::OfLibTorch(1, 13);
  const std::vector<Case> cases = {
      {Byte(9), "unknown request type 9 (expected 0 to 8)"},
      {Byte(200) + Bytes("/k"), "unknown request type 200 (expected 0 to 8)"},
      {Byte(7), "watch_key (type 7) is refused: c10d 1.13 keeps sending a watcher the key's changes after it has "
                "gone, which breaks the connection of whoever sets the key next"},
      {Byte(0) + Uint64(uint64_t{1} << 40), "a key of 1099511627776 bytes (expected at most 65536)"},
      {Byte(2) + Uint64(v1_13.max_key_bytes + 1), "a key of 65537 bytes (expected at most 65536)"},
      {Byte(0) + Bytes("/k") + Uint64(v1_13.max_value_bytes + 1),
       "a value of 16777217 bytes (expected at most 16777216)"},
      {Byte(1) + Bytes("/k") + Bytes("") + Uint64(~uint64_t{0}),
       "a value of 18446744073709551615 bytes (expected at most 16777216)"},
      {Byte(4) + Uint64(v1_13.max_keys + 1), "a list of 65537 keys (expected at most 65536)"},
  };
  for (const Case& c : cases) {
    const StoreRequestScan scan = Scan(v1_13, c.bytes);
    CHECK(scan.status == Status::kInvalid);
    CHECK(scan.error == c.error);
  }
}

TEST_CASE("ScanStoreRequest holds a connection of LibTorch 2.2 and later to validate first, once, with c10d's magic",
          "[distribute]") {
  const StoreProtocol& v2_11 = StoreProtocol::OfLibTorch(2, 11);
  const std::string validate = Byte(0) + Uint32(kStoreValidationMagic);
  CHECK(validate == std::string("\x00\xce\xf7\x85\x3c", 5));  // as c10d's client sends it
  CHECK(Scan(v2_11, validate, /*first=*/true).status == Status::kComplete);
  struct Case {
    std::string bytes;
    bool first;
    std::string error;
  };
  const std::vector<Case> cases = {
      {Byte(1) + Bytes("/k") + Bytes("v"), true,
       "the connection opened with set (type 1), but c10d of LibTorch 2.10 and later opens with validate (type 0)"},
      {validate, false, "validate (type 0) again after the connection's first request"},
      {Byte(0) + Uint32(0x12345678), true, "validate (type 0) with magic number 0x12345678 (expected 0x3c85f7ce)"},
      {Byte(18), false, "unknown request type 18 (expected 0 to 17)"},
      {Byte(3) + Uint64(8193), false, "a key of 8193 bytes (expected at most 8192)"},
      {Byte(14) + Bytes("/q") + Uint64(8388609), false, "a value of 8388609 bytes (expected at most 8388608)"},
      {Byte(11) + Uint64(65537), false, "a list of 65537 pairs (expected at most 65536)"},
      {Byte(11) + Uint64(1) + Bytes("/k") + Uint64(8388609), false,
       "a value of 8388609 bytes (expected at most 8388608)"},
  };
  for (const Case& c : cases) {
    INFO(c.error);
    const StoreRequestScan scan = Scan(v2_11, c.bytes, c.first);
    CHECK(scan.status == Status::kInvalid);
    CHECK(scan.error == c.error);
  }
  // 1.13 has no validate: its byte 0 is set, first or not.
  CHECK(Scan(StoreProtocol::OfLibTorch(1, 13), Byte(0) + Bytes("/k") + Bytes("v"), true).status == Status::kComplete);
}

TEST_CASE("ScanStoreRequest bounds a whole request, a check of many long keys included", "[distribute]") {
  for (const auto& [major, minor] : std::vector<std::pair<int, int>>{{1, 13}, {2, 11}}) {
    const StoreProtocol& protocol = StoreProtocol::OfLibTorch(major, minor);
    INFO(protocol.name);
    const uint64_t limit = protocol.max_request_bytes();
    // The largest compare_set is whole at the limit.
    const std::string key(protocol.max_key_bytes, 'k');
    const std::string value(protocol.max_value_bytes, 'v');
    const std::string largest = Byte(protocol.byte(Type::kCompareSet)) + Bytes(key) + Bytes(value) + Bytes(value);
    CHECK(largest.size() == limit);
    const StoreRequestScan scan = Scan(protocol, largest);
    CHECK(scan.status == Status::kComplete);
    CHECK(scan.length == limit);
    // A wait of many longest keys is refused at the key that would pass the limit.
    std::string many = Byte(protocol.byte(Type::kWait)) + Uint64(protocol.max_keys);
    while (many.size() + 8 + key.size() <= limit) many += Bytes(key);
    CHECK(Scan(protocol, many).status == Status::kIncomplete);
    const StoreRequestScan over = Scan(protocol, many + Uint64(key.size()));
    CHECK(over.status == Status::kInvalid);
    CHECK_THAT(over.error, Catch::StartsWith("a request of more than " + std::to_string(limit) + " bytes (key of " +
                                             std::to_string(key.size()) + " bytes at byte "));
  }
}
