#pragma once
/// Internal: the fields of a serialized protobuf message, read from its wire format without
/// building messages (https://protobuf.dev/programming-guides/encoding/). Malformed bytes
/// throw DataError saying what is wrong.

#include <cstdint>
#include <string_view>

namespace est::data::wire {

/// How a field's value is encoded.
enum class WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

/// One field of a message.
struct Field {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  /// The value of a varint field.
  uint64_t varint = 0;
  /// The bytes of a length-delimited field, or the 4 or 8 bytes of a fixed one.
  std::string_view bytes;
};

/// Reads one varint from the front of `input` and drops it from `input`; DataError when
/// `input` ends inside it or it is longer than 10 bytes.
uint64_t ReadVarint(std::string_view* input);

/// The fields of one message, in the order they appear. Groups (a deprecated encoding no
/// Example field uses) are skipped whole.
class MessageReader {
 public:
  explicit MessageReader(std::string_view message) : rest_(message) {}

  /// Sets `field` to the next field and returns true, or returns false at the end.
  bool next(Field* field);

 private:
  std::string_view rest_;
};

}  // namespace est::data::wire
