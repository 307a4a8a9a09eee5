#include "net/secret_compare.h"

#include <catch2/catch.hpp>

#include <string>

using est::net::ConstantTimeEquals;

TEST_CASE("ConstantTimeEquals is true for equal secrets only", "[net]") {
  CHECK(ConstantTimeEquals("", ""));
  CHECK(ConstantTimeEquals("s3cret-token", "s3cret-token"));
  CHECK_FALSE(ConstantTimeEquals("s3cret-token", "s3cret-tokeN"));
  CHECK_FALSE(ConstantTimeEquals("X3cret-token", "s3cret-token"));
  // A prefix is not the secret, whichever side is the longer.
  CHECK_FALSE(ConstantTimeEquals("s3cret", "s3cret-token"));
  CHECK_FALSE(ConstantTimeEquals("s3cret-token", "s3cret"));
  CHECK_FALSE(ConstantTimeEquals("", "a"));
  // Bytes past a NUL count: the strings are compared whole.
  CHECK_FALSE(ConstantTimeEquals(std::string("ab\0c", 4), std::string("ab\0d", 4)));
  CHECK(ConstantTimeEquals(std::string("ab\0c", 4), std::string("ab\0c", 4)));
}
