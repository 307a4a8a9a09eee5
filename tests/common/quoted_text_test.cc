// Text inside error messages: quoted with control bytes escaped, shortened, listed, and
// another library's message put on one line.

#include "common/quoted_text.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using est::OneLine;
using est::QuotedList;
using est::QuotedText;

TEST_CASE("QuotedText escapes control bytes and shortens long text, saying how long", "[common]") {
  CHECK(QuotedText("abc") == "'abc'");
  CHECK(QuotedText(std::string("a\0b\nc\x7f", 6)) == "'a\\x00b\\x0Ac\\x7F'");
  CHECK(QuotedText(std::string(100, 'x'), 4) == "'xxxx…' (100 bytes)");
}

TEST_CASE("QuotedList lists the first items and counts the rest", "[common]") {
  CHECK(QuotedList({}) == "");
  CHECK(QuotedList({"a", "b"}) == "'a', 'b'");
  CHECK(QuotedList({"a", "b", "c", "d"}, 2) == "'a', 'b' and 2 more");
}

TEST_CASE("OneLine joins lines with semicolons and drops trailing blanks", "[common]") {
  CHECK(OneLine("one") == "one");
  CHECK(OneLine("first\nsecond\nthird\n \n") == "first; second; third");
  CHECK(OneLine("") == "");
}
