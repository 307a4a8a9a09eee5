#include "distribute/collective/nccl/nccl_unique_id.h"

#include "common/error.h"

namespace est::distribute {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string EncodeNcclUniqueId(const ncclUniqueId& id) {
  std::string text;
  text.reserve(2 * NCCL_UNIQUE_ID_BYTES);
  for (char c : id.internal) {
    auto byte = static_cast<unsigned char>(c);
    text += kDigits[byte >> 4];
    text += kDigits[byte & 0xf];
  }
  return text;
}

ncclUniqueId DecodeNcclUniqueId(const std::string& text, const std::string& key) {
  EST_CHECK(text.size() == 2 * NCCL_UNIQUE_ID_BYTES, CommunicationError, "NCCL unique id at store key '", key,
            "' has ", text.size(), " characters; expected ", 2 * NCCL_UNIQUE_ID_BYTES,
            " hexadecimal digits (was the key written by another program?)");
  ncclUniqueId id;
  for (size_t i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
    int high = HexValue(text[2 * i]);
    int low = HexValue(text[2 * i + 1]);
    EST_CHECK(high >= 0 && low >= 0, CommunicationError, "NCCL unique id at store key '", key,
              "' has a non-hexadecimal character at offset ", high < 0 ? 2 * i : 2 * i + 1,
              "; expected ", 2 * NCCL_UNIQUE_ID_BYTES, " hexadecimal digits");
    id.internal[i] = static_cast<char>(high << 4 | low);
  }
  return id;
}

}  // namespace est::distribute
