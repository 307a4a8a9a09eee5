#include "distribute/cluster/cluster_address.h"

#include <string>

#include "common/error.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

TEST_CASE("ParseHostPort splits host:port and rejects anything else, quoting it", "[distribute]") {
  SECTION("host names, IPv4 and bracketed IPv6") {
    HostPort named = ParseHostPort("localhost:12345", "task");
    CHECK(named.host == "localhost");
    CHECK(named.port == 12345);
    CHECK(ParseHostPort("10.0.0.7:1", "task").host == "10.0.0.7");
    HostPort ipv6 = ParseHostPort("[::1]:65535", "task");
    CHECK(ipv6.host == "::1");
    CHECK(ipv6.port == 65535);
  }
  SECTION("malformed addresses") {
    for (const std::string address : {"localhost", ":2222", "host:", "host:0", "host:65536", "host:22a", "host:-1",
                                      "host:+22", "::1:2222", "[host]:2222", "[::1:2222", "my host:2222", ""}) {
      CAPTURE(address);
      CHECK_THROWS_MATCHES(
          ParseHostPort(address, "job \"worker\" task 3"), ConfigError,
          MessageMatches(Catch::Contains("\"" + address + "\"") && Catch::Contains("job \"worker\" task 3")));
    }
  }
  SECTION("a host name of 70 000 characters, quoted once and shortened") {
    const std::string address = std::string(70000, 'h') + ":2222";
    CHECK_THROWS_MATCHES(ParseHostPort(address, "MASTER_ADDR"), ConfigError,
                         MessageMatches(Catch::Equals("MASTER_ADDR: address \"" + address.substr(0, 64) +
                                                      "...\" (70005 characters) is not \"host:port\": a host name "
                                                      "has at most 253 characters")));
  }
  SECTION("ports alone") {
    CHECK(ParsePort("29500", "MASTER_PORT") == 29500);
    CHECK_THROWS_MATCHES(ParsePort("99999", "MASTER_PORT"), ConfigError,
                         MessageMatches(Catch::Contains("MASTER_PORT") && Catch::Contains("\"99999\"")));
    CHECK_THROWS_AS(ParsePort(" 80", "MASTER_PORT"), ConfigError);
  }
}

TEST_CASE("JoinHostPort, IsLoopbackHost and LocalAddressToward", "[distribute]") {
  CHECK(JoinHostPort("node03", 29500) == "node03:29500");
  CHECK(JoinHostPort("::1", 2222) == "[::1]:2222");
  CHECK(JoinHostPort("fe80::2", 1) == "[fe80::2]:1");

  CHECK(IsLoopbackHost("localhost"));
  CHECK(IsLoopbackHost("127.0.0.1"));
  CHECK(IsLoopbackHost("127.3.2.1"));
  CHECK(IsLoopbackHost("::1"));
  CHECK_FALSE(IsLoopbackHost("128.0.0.1"));
  CHECK_FALSE(IsLoopbackHost("node03"));
  CHECK_FALSE(IsLoopbackHost("localhost.example.com"));

  CHECK(LocalAddressToward("127.0.0.1", 29500) == std::optional<std::string>("127.0.0.1"));
}
