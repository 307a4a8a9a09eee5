#include "distribute/rendezvous/store_request.h"

#include <torch/version.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace est::distribute {
namespace {

using Type = StoreRequestType;

enum class Field { kKey, kValue, kInt64, kUint32, kKeys, kPairs };

// The arguments of a request type: the first `count` of `fields`.
struct Arguments {
  std::array<Field, 3> fields;
  size_t count;
};

Arguments ArgumentsOf(Type type) {
  switch (type) {
    case Type::kValidate: return {{Field::kUint32}, 1};
    case Type::kSet: return {{Field::kKey, Field::kValue}, 2};
    case Type::kCompareSet: return {{Field::kKey, Field::kValue, Field::kValue}, 3};
    case Type::kGet: return {{Field::kKey}, 1};
    case Type::kAdd: return {{Field::kKey, Field::kInt64}, 2};
    case Type::kCheck: return {{Field::kKeys}, 1};
    case Type::kWait: return {{Field::kKeys}, 1};
    case Type::kGetNumKeys: return {{}, 0};
    case Type::kWatchKey: return {{Field::kKey}, 1};
    case Type::kDeleteKey: return {{Field::kKey}, 1};
    case Type::kAppend: return {{Field::kKey, Field::kValue}, 2};
    case Type::kMultiGet: return {{Field::kKeys}, 1};
    case Type::kMultiSet: return {{Field::kPairs}, 1};
    case Type::kCancelWait: return {{}, 0};
    case Type::kPing: return {{Field::kUint32}, 1};
    case Type::kQueuePush: return {{Field::kKey, Field::kValue}, 2};
    case Type::kQueuePop: return {{Field::kKey}, 1};
    case Type::kQueueLen: return {{Field::kKey}, 1};
    case Type::kListKeys: return {{}, 0};
  }
  EST_ASSERT(false, "request type ", static_cast<int>(type));
  return {{}, 0};
}

// The protocols, each as the one before it changed. 1.13 and 2.0: nine types, watch_key
// among them. 2.1: watch_key gone, append, multi_get, multi_set and cancel_wait added. 2.2:
// validate first, every other type one byte up. 2.4: the server is libuv's by default, with
// its lower limits. 2.5: ping. 2.8: the queues. 2.10: list_keys.
std::vector<StoreProtocol> MakeProtocols() {
  std::vector<StoreProtocol> protocols(7);
  protocols[0].name = "c10d of LibTorch 1.13 and 2.0";
  protocols[0].types = {Type::kSet,  Type::kCompareSet, Type::kGet,      Type::kAdd,      Type::kCheck,
                        Type::kWait, Type::kGetNumKeys, Type::kWatchKey, Type::kDeleteKey};
  protocols[1].name = "c10d of LibTorch 2.1";
  protocols[1].types = {Type::kSet,        Type::kCompareSet, Type::kGet,    Type::kAdd,
                        Type::kCheck,      Type::kWait,       Type::kGetNumKeys, Type::kDeleteKey,
                        Type::kAppend,     Type::kMultiGet,   Type::kMultiSet,   Type::kCancelWait};
  protocols[2] = protocols[1];
  protocols[2].name = "c10d of LibTorch 2.2 and 2.3";
  protocols[2].types.insert(protocols[2].types.begin(), Type::kValidate);
  protocols[2].validate_first = true;
  protocols[3] = protocols[2];
  protocols[3].name = "c10d of LibTorch 2.4";
  protocols[3].max_key_bytes = uint64_t{8} << 10;     // libuv's MAX_STRING_LEN
  protocols[3].max_value_bytes = uint64_t{8} << 20;   // libuv's MAX_PAYLOAD_LEN
  protocols[4] = protocols[3];
  protocols[4].name = "c10d of LibTorch 2.5 to 2.7";
  protocols[4].types.push_back(Type::kPing);
  protocols[5] = protocols[4];
  protocols[5].name = "c10d of LibTorch 2.8 and 2.9";
  protocols[5].types.insert(protocols[5].types.end(), {Type::kQueuePush, Type::kQueuePop, Type::kQueueLen});
  protocols[6] = protocols[5];
  protocols[6].name = "c10d of LibTorch 2.10 and later";
  protocols[6].types.push_back(Type::kListKeys);
  return protocols;
}

const std::vector<StoreProtocol>& Protocols() {
  static const std::vector<StoreProtocol> protocols = MakeProtocols();
  return protocols;
}

// Reads the fields of a request from a byte range that may end before the request does.
class Cursor {
 public:
  Cursor(const char* data, size_t size, size_t offset) : data_(data), size_(size), offset_(offset) {}

  // Reads a number of the client's byte order; false when the bytes end first.
  template <typename Number>
  bool Read(Number& value) {
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

std::string Named(const StoreProtocol& protocol, Type type) {
  return std::string(StoreRequestTypeName(type)) + " (type " + std::to_string(protocol.byte(type)) + ")";
}

std::string Hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// Scans the fields of one request against one protocol's limits.
class FieldScanner {
 public:
  FieldScanner(const StoreProtocol& protocol, Cursor& cursor) : protocol_(protocol), cursor_(cursor) {}

  StoreRequestScan Scan(Field field) {
    switch (field) {
      case Field::kKey: return Bytes("key", protocol_.max_key_bytes);
      case Field::kValue: return Bytes("value", protocol_.max_value_bytes);
      case Field::kInt64: return cursor_.Skip(sizeof(int64_t)) ? Complete() : StoreRequestScan{};
      case Field::kUint32: return cursor_.Skip(sizeof(uint32_t)) ? Complete() : StoreRequestScan{};
      case Field::kKeys: return List("keys", {Field::kKey});
      case Field::kPairs: return List("pairs", {Field::kKey, Field::kValue});
    }
    return {};
  }

 private:
  // A key or value of at most `limit` bytes: kComplete (length unused) when whole.
  StoreRequestScan Bytes(const char* what, uint64_t limit) {
    uint64_t length = 0;
    if (!cursor_.Read(length)) return {};
    if (length > limit) {
      return Invalid(std::string("a ") + what + " of " + std::to_string(length) + " bytes (expected at most " +
                     std::to_string(limit) + ")");
    }
    const uint64_t max_request = protocol_.max_request_bytes();
    if (cursor_.offset() > max_request || length > max_request - cursor_.offset()) {
      return Invalid("a request of more than " + std::to_string(max_request) + " bytes (" + what + " of " +
                     std::to_string(length) + " bytes at byte " + std::to_string(cursor_.offset()) + ")");
    }
    if (!cursor_.Skip(length)) return {};
    return Complete();
  }

  // A count, then that many entries, each of `entry`'s fields.
  StoreRequestScan List(const char* what, std::initializer_list<Field> entry) {
    uint64_t count = 0;
    if (!cursor_.Read(count)) return {};
    if (count > protocol_.max_keys) {
      return Invalid("a list of " + std::to_string(count) + " " + what + " (expected at most " +
                     std::to_string(protocol_.max_keys) + ")");
    }
    for (uint64_t i = 0; i < count; ++i) {
      for (Field field : entry) {
        StoreRequestScan scan = Scan(field);
        if (scan.status != StoreRequestScan::Status::kComplete) return scan;
      }
    }
    return Complete();
  }

  const StoreProtocol& protocol_;
  Cursor& cursor_;
};

}  // namespace

const char* StoreRequestTypeName(StoreRequestType type) {
  switch (type) {
    case Type::kValidate: return "validate";
    case Type::kSet: return "set";
    case Type::kCompareSet: return "compare_set";
    case Type::kGet: return "get";
    case Type::kAdd: return "add";
    case Type::kCheck: return "check";
    case Type::kWait: return "wait";
    case Type::kGetNumKeys: return "get_num_keys";
    case Type::kWatchKey: return "watch_key";
    case Type::kDeleteKey: return "delete_key";
    case Type::kAppend: return "append";
    case Type::kMultiGet: return "multi_get";
    case Type::kMultiSet: return "multi_set";
    case Type::kCancelWait: return "cancel_wait";
    case Type::kPing: return "ping";
    case Type::kQueuePush: return "queue_push";
    case Type::kQueuePop: return "queue_pop";
    case Type::kQueueLen: return "queue_len";
    case Type::kListKeys: return "list_keys";
  }
  return "unknown";
}

bool StoreProtocol::has(StoreRequestType type) const {
  for (StoreRequestType own : types) {
    if (own == type) return true;
  }
  return false;
}

uint8_t StoreProtocol::byte(StoreRequestType type) const {
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == type) return static_cast<uint8_t>(i);
  }
  EST_ASSERT(false, name, " has no request type ", StoreRequestTypeName(type));
  return 0;
}

const StoreProtocol& StoreProtocol::OfLibTorch(int major, int minor) {
  const auto& protocols = Protocols();
  if (major < 2 || (major == 2 && minor == 0)) return protocols[0];
  if (major > 2) return protocols[6];
  if (minor == 1) return protocols[1];
  if (minor <= 3) return protocols[2];
  if (minor == 4) return protocols[3];
  if (minor <= 7) return protocols[4];
  if (minor <= 9) return protocols[5];
  return protocols[6];
}

const StoreProtocol& StoreProtocol::OfThisBuild() { return OfLibTorch(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR); }

StoreRequestScan ScanStoreRequest(const StoreProtocol& protocol, const char* data, size_t size, bool first) {
  if (size == 0) return {};
  const auto byte = static_cast<uint8_t>(data[0]);
  if (byte >= protocol.types.size()) {
    return Invalid("unknown request type " + std::to_string(byte) + " (expected 0 to " +
                   std::to_string(protocol.types.size() - 1) + ")");
  }
  const Type type = protocol.types[byte];
  if (type == Type::kWatchKey) {
    return Invalid(Named(protocol, type) +
                   " is refused: c10d 1.13 keeps sending a watcher the key's changes after it has gone, which "
                   "breaks the connection of whoever sets the key next");
  }
  if (protocol.validate_first && first && type != Type::kValidate) {
    return Invalid("the connection opened with " + Named(protocol, type) + ", but " + protocol.name +
                   " opens with " + Named(protocol, Type::kValidate));
  }
  if (protocol.validate_first && !first && type == Type::kValidate) {
    return Invalid(Named(protocol, type) + " again after the connection's first request");
  }
  Cursor cursor(data, size, 1);
  const Arguments arguments = ArgumentsOf(type);
  FieldScanner fields(protocol, cursor);
  for (size_t i = 0; i < arguments.count; ++i) {
    StoreRequestScan scan = fields.Scan(arguments.fields[i]);
    if (scan.status != StoreRequestScan::Status::kComplete) return scan;
  }
  if (type == Type::kValidate) {
    uint32_t magic = 0;
    std::memcpy(&magic, data + 1, sizeof(magic));
    if (magic != kStoreValidationMagic) {
      return Invalid(Named(protocol, type) + " with magic number " + Hex(magic) + " (expected " +
                     Hex(kStoreValidationMagic) + ")");
    }
  }
  return Complete(cursor.offset());
}

}  // namespace est::distribute
