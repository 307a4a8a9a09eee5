#include "distribute/cluster/cluster_environment.h"

#include <cstdlib>

#include "common/error.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

TEST_CASE("Environments read variables, and ReadIntVariable names a malformed one", "[distribute]") {
  SECTION("EnvironmentOf holds exactly its variables") {
    Environment env = EnvironmentOf({{"RANK", "3"}, {"EMPTY", ""}});
    CHECK(env("RANK") == std::optional<std::string>("3"));
    CHECK(env("EMPTY") == std::optional<std::string>(""));
    CHECK_FALSE(env("WORLD_SIZE").has_value());
  }
  SECTION("ProcessEnvironment reads the process's variables") {
    ::setenv("EST_CLUSTER_ENVIRONMENT_TEST", "value", 1);
    CHECK(ProcessEnvironment()("EST_CLUSTER_ENVIRONMENT_TEST") == std::optional<std::string>("value"));
    ::unsetenv("EST_CLUSTER_ENVIRONMENT_TEST");
    CHECK_FALSE(ProcessEnvironment()("EST_CLUSTER_ENVIRONMENT_TEST").has_value());
  }
  SECTION("integers") {
    Environment env =
        EnvironmentOf({{"A", "12"}, {"B", "-3"}, {"C", "1x"}, {"D", ""}, {"E", " 1"}, {"F", "99999999999"}});
    CHECK(ReadIntVariable(env, "A") == std::optional<int>(12));
    CHECK(ReadIntVariable(env, "B") == std::optional<int>(-3));
    CHECK_FALSE(ReadIntVariable(env, "UNSET").has_value());
    CHECK(ReadRequiredIntVariable(env, "A", 0, 12) == 12);
    CHECK_THROWS_MATCHES(ReadIntVariable(env, "B", 0), ConfigError,
                         MessageMatches(Catch::Contains("B=\"-3\"") && Catch::Contains("range")));
    CHECK_THROWS_MATCHES(ReadIntVariable(env, "A", 0, 11), ConfigError, MessageMatches(Catch::Contains("A=\"12\"")));
    CHECK_THROWS_MATCHES(ReadIntVariable(env, "F"), ConfigError,
                         MessageMatches(Catch::Contains("F=\"99999999999\"") && Catch::Contains("range")));
    for (const char* name : {"C", "D", "E"}) {
      CAPTURE(name);
      CHECK_THROWS_MATCHES(ReadIntVariable(env, name), ConfigError,
                           MessageMatches(Catch::Contains(std::string(name) + "=\"" + *env(name) + "\"") &&
                                          Catch::Contains("not an integer")));
    }
    CHECK_THROWS_MATCHES(ReadRequiredIntVariable(env, "UNSET"), ConfigError,
                         MessageMatches(Catch::Contains("UNSET") && Catch::Contains("not set")));
  }
}
