#include <catch2/catch.hpp>
#include <chrono>

#include "distribute/rendezvous/poll.h"

using namespace est::distribute;
using namespace std::chrono_literals;

TEST_CASE("PollUntil stops when done or at the deadline", "[distribute]") {
  int calls = 0;
  CHECK(PollUntil(std::chrono::steady_clock::now() + 1s, [&] { return ++calls == 3; }));
  CHECK(calls == 3);
  calls = 0;
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(PollUntil(start + 100ms, [&] { return ++calls < 0; }));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 100ms);
  CHECK(elapsed < 500ms);
  CHECK(calls >= 2);
  calls = 0;
  CHECK_FALSE(PollUntil(start - 1s, [&] { return ++calls < 0; }));
  CHECK(calls == 1);
}
