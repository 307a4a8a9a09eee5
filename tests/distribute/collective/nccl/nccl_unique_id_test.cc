#include "distribute/collective/nccl/nccl_unique_id.h"

#include <catch2/catch.hpp>

#include <cstring>

#include "common/error.h"

namespace est::distribute {
namespace {

TEST_CASE("NCCL unique id round-trips through its hexadecimal text", "[distribute][nccl]") {
  ncclUniqueId id;
  for (size_t i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) id.internal[i] = static_cast<char>(i * 37 + 5);
  std::string text = EncodeNcclUniqueId(id);
  CHECK(text.size() == 2 * NCCL_UNIQUE_ID_BYTES);
  CHECK(text.substr(0, 6) == "052a4f");
  ncclUniqueId decoded = DecodeNcclUniqueId(text, "nccl/1/unique_id");
  CHECK(std::memcmp(decoded.internal, id.internal, NCCL_UNIQUE_ID_BYTES) == 0);
  // Upper-case digits are read too.
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  decoded = DecodeNcclUniqueId(text, "nccl/1/unique_id");
  CHECK(std::memcmp(decoded.internal, id.internal, NCCL_UNIQUE_ID_BYTES) == 0);
}

TEST_CASE("NCCL unique id text of the wrong length or with other characters names the key", "[distribute][nccl]") {
  CHECK_THROWS_AS(DecodeNcclUniqueId("abc", "nccl/3/unique_id"), CommunicationError);
  CHECK_THROWS_WITH(DecodeNcclUniqueId("abc", "nccl/3/unique_id"),
                    Catch::Contains("nccl/3/unique_id") && Catch::Contains("has 3 characters") &&
                        Catch::Contains("expected 256 hexadecimal digits"));
  std::string text(2 * NCCL_UNIQUE_ID_BYTES, '0');
  text[17] = 'g';
  CHECK_THROWS_WITH(DecodeNcclUniqueId(text, "nccl/3/unique_id"),
                    Catch::Contains("non-hexadecimal character at offset 17"));
}

}  // namespace
}  // namespace est::distribute
