// ParseJsonFromOutside: JSON from outside the process, its nesting bounded.

#include "common/json_from_outside.h"

#include <catch2/catch.hpp>

#include <string>

namespace json_from_outside_test {

TEST_CASE("JSON nested up to the bound parses; deeper stops at the parse, however deep", "[common]") {
  const auto nested = [](int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); };
  const est::ParsedJson ok = est::ParseJsonFromOutside(nested(est::kMaxJsonDepth));
  REQUIRE(ok.ok());
  CHECK(ok.value.dump() == nested(est::kMaxJsonDepth));
  for (int depth : {est::kMaxJsonDepth + 1, 1000000}) {
    const est::ParsedJson deep = est::ParseJsonFromOutside(nested(depth));
    CHECK(deep.error == "nested deeper than 100 arrays and objects");
    CHECK(deep.value.is_null());
  }
  // Objects count as arrays do; an unclosed text of 60 000 '[' (a line sent to a port) too.
  std::string objects;
  for (int i = 0; i <= est::kMaxJsonDepth; ++i) objects += "{\"a\":";
  objects += "1" + std::string(static_cast<size_t>(est::kMaxJsonDepth + 1), '}');
  CHECK(est::ParseJsonFromOutside(objects).error == "nested deeper than 100 arrays and objects");
  CHECK(est::ParseJsonFromOutside(std::string(60000, '[')).error == "nested deeper than 100 arrays and objects");
  CHECK(est::ParseJsonFromOutside(nested(3), 2).error == "nested deeper than 2 arrays and objects");
}

TEST_CASE("Text that is not JSON gives the parser's message and where", "[common]") {
  const est::ParsedJson bad = est::ParseJsonFromOutside(R"({"a": [1, 2,, 3]})");
  CHECK_FALSE(bad.ok());
  CHECK(bad.error.find("syntax error") != std::string::npos);
  CHECK(bad.error_byte == 12);
  CHECK(est::ParseJsonFromOutside("1e400").error.find("1e400") != std::string::npos);
  const est::ParsedJson fine = est::ParseJsonFromOutside(R"({"a": [1, {"b": null}]})");
  REQUIRE(fine.ok());
  CHECK(fine.value["a"][1].contains("b"));
}

}  // namespace json_from_outside_test
