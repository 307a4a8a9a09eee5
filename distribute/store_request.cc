#include "distribute/store_request.h"

#include <array>
#include <cstring>

namespace est::distribute {
namespace {

enum class Field { kKey, kValue, kInt64, kKeys };

// A request type: its arguments, the first `count` of `fields`; and why it is refused, if it is.
struct Arguments {
  std::array<Field, 3> fields;
  size_t count;
  const char* refused = nullptr;
};

// c10d 1.13's server keeps a watcher's socket after the watcher is gone, and the next set of
// the key fails on it: the connection of the client that set it is closed. We never watch.
constexpr char kWatchRefused[] =
    "watch_key (type 7) is refused: c10d 1.13 keeps sending a watcher the key's changes after it has gone, "
    "which breaks the connection of whoever sets the key next";

// The arguments of each request type c10d 1.13's client sends, by type byte.
constexpr Arguments kRequestTypes[] = {
    {{Field::kKey, Field::kValue}, 2},                 // 0 set
    {{Field::kKey, Field::kValue, Field::kValue}, 3},  // 1 compare_set
    {{Field::kKey}, 1},                                // 2 get
    {{Field::kKey, Field::kInt64}, 2},                 // 3 add
    {{Field::kKeys}, 1},                               // 4 check
    {{Field::kKeys}, 1},                               // 5 wait
    {{}, 0},                                           // 6 get_num_keys
    {{Field::kKey}, 1, kWatchRefused},                 // 7 watch_key
    {{Field::kKey}, 1},                                // 8 delete_key
};
constexpr size_t kRequestTypeCount = sizeof(kRequestTypes) / sizeof(kRequestTypes[0]);

// Reads the fields of a request from a byte range that may end before the request does.
class Cursor {
 public:
  Cursor(const char* data, size_t size, size_t offset) : data_(data), size_(size), offset_(offset) {}

  // Reads a uint64; false when the bytes end first.
  bool ReadUint64(uint64_t& value) {
    if (size_ - offset_ < sizeof(value)) return false;
    std::memcpy(&value, data_ + offset_, sizeof(value));
    offset_ += sizeof(value);
    return true;
  }
  // Skips `count` bytes; false when the bytes end first.
  bool Skip(uint64_t count) {
    if (size_ - offset_ < count) return false;
    offset_ += count;
    return true;
  }
  size_t offset() const { return offset_; }

 private:
  const char* data_;
  size_t size_;
  size_t offset_;
};

// A whole field (its scan's length is not used) or a whole request of `length` bytes.
StoreRequestScan Complete(size_t length = 0) { return {StoreRequestScan::Status::kComplete, length, {}}; }

StoreRequestScan Invalid(std::string error) {
  StoreRequestScan scan;
  scan.status = StoreRequestScan::Status::kInvalid;
  scan.error = std::move(error);
  return scan;
}

// A key or value of at most `limit` bytes: kComplete (length unused) when whole.
StoreRequestScan ScanBytes(Cursor& cursor, const char* what, uint64_t limit) {
  uint64_t length = 0;
  if (!cursor.ReadUint64(length)) return {};
  if (length > limit) {
    return Invalid(std::string("a ") + what + " of " + std::to_string(length) + " bytes (expected at most " +
                   std::to_string(limit) + ")");
  }
  if (cursor.offset() > kMaxStoreRequestBytes || length > kMaxStoreRequestBytes - cursor.offset()) {
    return Invalid("a request of more than " + std::to_string(kMaxStoreRequestBytes) + " bytes (" + what +
                   " of " + std::to_string(length) + " bytes at byte " + std::to_string(cursor.offset()) + ")");
  }
  if (!cursor.Skip(length)) return {};
  return Complete();
}

StoreRequestScan ScanField(Cursor& cursor, Field field) {
  switch (field) {
    case Field::kKey: return ScanBytes(cursor, "key", kMaxStoreKeyBytes);
    case Field::kValue: return ScanBytes(cursor, "value", kMaxStoreValueBytes);
    case Field::kInt64: {
      if (!cursor.Skip(sizeof(int64_t))) return {};
      return Complete();
    }
    case Field::kKeys: {
      uint64_t count = 0;
      if (!cursor.ReadUint64(count)) return {};
      if (count > kMaxStoreKeysPerRequest) {
        return Invalid("a list of " + std::to_string(count) + " keys (expected at most " +
                       std::to_string(kMaxStoreKeysPerRequest) + ")");
      }
      for (uint64_t i = 0; i < count; ++i) {
        StoreRequestScan key = ScanBytes(cursor, "key", kMaxStoreKeyBytes);
        if (key.status != StoreRequestScan::Status::kComplete) return key;
      }
      return Complete();
    }
  }
  return {};
}

}  // namespace

StoreRequestScan ScanStoreRequest(const char* data, size_t size) {
  if (size == 0) return {};
  const auto type = static_cast<uint8_t>(data[0]);
  if (type >= kRequestTypeCount) {
    return Invalid("unknown request type " + std::to_string(type) + " (expected 0 to " +
                   std::to_string(kRequestTypeCount - 1) + ")");
  }
  Cursor cursor(data, size, 1);
  const Arguments& arguments = kRequestTypes[type];
  if (arguments.refused != nullptr) return Invalid(arguments.refused);
  for (size_t i = 0; i < arguments.count; ++i) {
    StoreRequestScan scan = ScanField(cursor, arguments.fields[i]);
    if (scan.status != StoreRequestScan::Status::kComplete) return scan;
  }
  return Complete(cursor.offset());
}

}  // namespace est::distribute
