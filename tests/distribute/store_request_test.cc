// The framing of c10d 1.13's store requests, as the chief's store front scans them.

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "distribute/store_request.h"

using namespace est::distribute;
using Status = StoreRequestScan::Status;

namespace {

std::string Uint64(uint64_t value) { return std::string(reinterpret_cast<const char*>(&value), sizeof(value)); }
std::string Bytes(const std::string& text) { return Uint64(text.size()) + text; }
std::string Keys(const std::vector<std::string>& keys) {
  std::string bytes = Uint64(keys.size());
  for (const std::string& key : keys) bytes += Bytes(key);
  return bytes;
}
std::string Type(uint8_t type) { return std::string(1, static_cast<char>(type)); }

StoreRequestScan Scan(const std::string& bytes) { return ScanStoreRequest(bytes.data(), bytes.size()); }

}  // namespace

TEST_CASE("ScanStoreRequest finds where each request type of c10d 1.13 but watch_key ends", "[distribute]") {
  const std::vector<std::string> requests = {
      Type(0) + Bytes("/k") + Bytes(std::string("v\0w", 3)),  // set
      Type(1) + Bytes("/k") + Bytes("old") + Bytes("new"),   // compare_set
      Type(2) + Bytes("/k"),                                 // get
      Type(3) + Bytes("/n") + Uint64(static_cast<uint64_t>(-5)),  // add
      Type(4) + Keys({"/a", "/bb", ""}),                     // check
      Type(5) + Keys({}),                                    // wait
      Type(6),                                               // get_num_keys
      Type(8) + Bytes("/k"),                                 // delete_key
  };
  for (const std::string& request : requests) {
    INFO("request type " << static_cast<int>(request[0]));
    const StoreRequestScan whole = Scan(request);
    CHECK(whole.status == Status::kComplete);
    CHECK(whole.length == request.size());
    // Followed by the next request: the same length.
    const StoreRequestScan followed = Scan(request + Type(6) + "garbage");
    CHECK(followed.status == Status::kComplete);
    CHECK(followed.length == request.size());
    // Cut anywhere: the valid beginning of a request.
    for (size_t cut = 0; cut < request.size(); ++cut) {
      INFO("cut at " << cut);
      CHECK(Scan(request.substr(0, cut)).status == Status::kIncomplete);
    }
  }
}

TEST_CASE("ScanStoreRequest refuses watch_key, unknown types, and lengths beyond its limits as soon as they arrive",
          "[distribute]") {
  struct Case {
    std::string bytes;
    std::string error;
  };
  const std::vector<Case> cases = {
      {Type(9), "unknown request type 9 (expected 0 to 8)"},
      {Type(200) + Bytes("/k"), "unknown request type 200 (expected 0 to 8)"},
      {Type(7), "watch_key (type 7) is refused: c10d 1.13 keeps sending a watcher the key's changes after it has "
                "gone, which breaks the connection of whoever sets the key next"},
      {Type(0) + Uint64(uint64_t{1} << 40), "a key of 1099511627776 bytes (expected at most 65536)"},
      {Type(2) + Uint64(kMaxStoreKeyBytes + 1), "a key of 65537 bytes (expected at most 65536)"},
      {Type(0) + Bytes("/k") + Uint64(kMaxStoreValueBytes + 1),
       "a value of 16777217 bytes (expected at most 16777216)"},
      {Type(1) + Bytes("/k") + Bytes("") + Uint64(~uint64_t{0}),
       "a value of 18446744073709551615 bytes (expected at most 16777216)"},
      {Type(4) + Uint64(kMaxStoreKeysPerRequest + 1), "a list of 65537 keys (expected at most 65536)"},
  };
  for (const Case& c : cases) {
    const StoreRequestScan scan = Scan(c.bytes);
    CHECK(scan.status == Status::kInvalid);
    CHECK(scan.error == c.error);
  }
}

TEST_CASE("ScanStoreRequest bounds a whole request, a check of many long keys included", "[distribute]") {
  // The largest compare_set is whole at the limit.
  const std::string key(kMaxStoreKeyBytes, 'k');
  const std::string value(kMaxStoreValueBytes, 'v');
  const std::string largest = Type(1) + Bytes(key) + Bytes(value) + Bytes(value);
  CHECK(largest.size() == kMaxStoreRequestBytes);
  const StoreRequestScan scan = Scan(largest);
  CHECK(scan.status == Status::kComplete);
  CHECK(scan.length == kMaxStoreRequestBytes);
  // A wait of many 64 KiB keys is refused at the key that would pass the limit.
  std::string many = Type(5) + Uint64(kMaxStoreKeysPerRequest);
  while (many.size() + 8 + key.size() <= kMaxStoreRequestBytes) many += Bytes(key);
  CHECK(Scan(many).status == Status::kIncomplete);
  const StoreRequestScan over = Scan(many + Uint64(key.size()));
  CHECK(over.status == Status::kInvalid);
  CHECK_THAT(over.error, Catch::StartsWith("a request of more than " + std::to_string(kMaxStoreRequestBytes) +
                                           " bytes (key of 65536 bytes at byte "));
}
