#include "data/example/wire_reader.h"

#include "common/error.h"

namespace est::data::wire {
namespace {

/// Nested groups skipped at most; deeper nesting is refused, not recursed into.
constexpr int kMaxGroupDepth = 64;

/// Drops `count` bytes from the front of `input`, returning them.
std::string_view Take(std::string_view* input, uint64_t count, const char* what) {
  EST_CHECK(count <= input->size(), DataError, "malformed protobuf: ", what, " of ", count,
            " bytes runs past the end of its message (", input->size(), " bytes left)");
  std::string_view taken = input->substr(0, count);
  input->remove_prefix(count);
  return taken;
}

/// Reads a field's key; false at the end of `input`.
bool ReadKey(std::string_view* input, uint32_t* number, WireType* type) {
  if (input->empty()) return false;
  // A key is a 32-bit varint; protobuf keeps the low 32 bits of a longer one.
  const auto key = static_cast<uint32_t>(ReadVarint(input));
  *number = key >> 3;
  EST_CHECK(*number >= 1, DataError, "malformed protobuf: field number 0");
  *type = static_cast<WireType>(key & 7);
  return true;
}

/// Reads a field's value of wire type `type` into `field`; for a group, skips to its end.
void ReadValue(std::string_view* input, WireType type, uint32_t number, Field* field, int depth) {
  switch (type) {
    case WireType::kVarint:
      field->varint = ReadVarint(input);
      return;
    case WireType::kFixed64:
      field->bytes = Take(input, 8, "a fixed64 value");
      return;
    case WireType::kFixed32:
      field->bytes = Take(input, 4, "a fixed32 value");
      return;
    case WireType::kLengthDelimited:
      field->bytes = Take(input, ReadVarint(input), "a length-delimited field");
      return;
    case WireType::kStartGroup: {
      EST_CHECK(depth < kMaxGroupDepth, DataError, "malformed protobuf: groups nested deeper than ",
                kMaxGroupDepth);
      uint32_t inner_number = 0;
      WireType inner_type = WireType::kVarint;
      Field inner;
      while (ReadKey(input, &inner_number, &inner_type)) {
        if (inner_type == WireType::kEndGroup) {
          EST_CHECK(inner_number == number, DataError, "malformed protobuf: group ", number,
                    " ends with the end of group ", inner_number);
          return;
        }
        ReadValue(input, inner_type, inner_number, &inner, depth + 1);
      }
      EST_THROW(DataError, "malformed protobuf: group ", number, " has no end");
    }
    case WireType::kEndGroup:
      EST_THROW(DataError, "malformed protobuf: the end of group ", number, " without its start");
  }
  EST_THROW(DataError, "malformed protobuf: field ", number, " has wire type ", static_cast<uint32_t>(type),
            ", which does not exist");
}

}  // namespace

uint64_t ReadVarint(std::string_view* input) {
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    EST_CHECK(static_cast<size_t>(i) < input->size(), DataError, "malformed protobuf: a varint runs past the end of its message");
    const auto byte = static_cast<uint8_t>((*input)[i]);
    value |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      input->remove_prefix(i + 1);
      return value;
    }
  }
  EST_THROW(DataError, "malformed protobuf: a varint longer than 10 bytes");
}

bool MessageReader::next(Field* field) {
  while (ReadKey(&rest_, &field->number, &field->type)) {
    ReadValue(&rest_, field->type, field->number, field, 0);
    if (field->type != WireType::kStartGroup) return true;
  }
  return false;
}

}  // namespace est::data::wire
