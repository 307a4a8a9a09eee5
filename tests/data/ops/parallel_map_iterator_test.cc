#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/error.h"
#include "data/dataset.h"
#include "tests/data/test_datasets.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::DataError;
using est::data::Dataset;
using est::data::Element;
using est::data::Iterator;
using est::data::kAutotune;
using est::testing::Drain;
using est::testing::Endless;
using est::testing::Range;
using est::testing::Values;
using est::testing::Xs;

using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

namespace {

const int64_t kParallelCalls[] = {1, 2, 4, kAutotune};

/// What each next() of `iterator` gave, until the end or `max_calls` calls: "x=…
/// labels=…" for an element (its tensors flattened), "error: …" for an exception.
Strings Outcomes(Iterator& iterator, size_t max_calls = 100000) {
  Strings outcomes;
  while (outcomes.size() < max_calls) {
    try {
      auto element = iterator.next();
      if (!element) break;
      std::string outcome = "x=";
      for (int64_t value : Values(element->features.at("x").flatten())) {
        outcome += std::to_string(value) + ",";
      }
      if (element->labels.defined()) {
        outcome += " labels=";
        for (int64_t value : Values(element->labels.flatten())) {
          outcome += std::to_string(value) + ",";
        }
      }
      outcomes.push_back(outcome);
    } catch (const std::exception& error) {
      outcomes.push_back(std::string("error: ") + error.what());
    }
  }
  return outcomes;
}

Strings Outcomes(const Dataset& dataset, size_t max_calls = 100000) {
  return Outcomes(*dataset.make_iterator(), max_calls);
}

/// x -> x * x + 1, after a pause that varies with x so that workers finish out of order.
Element SquarePlusOne(Element element) {
  const int64_t x = element.features.at("x").item<int64_t>();
  std::this_thread::sleep_for(std::chrono::microseconds((x * 37) % 200));
  element.features["x"] = element.features["x"] * element.features["x"] + 1;
  return element;
}

/// Fails on every element whose x is 3 mod 4, naming it.
Element FailOnThreeModFour(Element element) {
  const int64_t x = element.features.at("x").item<int64_t>();
  std::this_thread::sleep_for(std::chrono::microseconds((x * 53) % 300));
  if (x % 4 == 3) throw std::runtime_error("bad element " + std::to_string(x));
  return element;
}

}  // namespace

TEST_CASE("Dataset::map with num_parallel_calls keeps the sequential order", "[data]") {
  SECTION("the sequence equals the sequential map's, with shuffle and repeat upstream") {
    auto build = [](int64_t calls) {
      return Range(300, /*labeled=*/true).shuffle(64, 5).repeat(2).map(SquarePlusOne, calls);
    };
    const Strings sequential = Outcomes(build(1));
    REQUIRE(sequential.size() == 600);
    for (int64_t calls : kParallelCalls) {
      INFO("num_parallel_calls " << calls);
      CHECK(Outcomes(build(calls)) == sequential);
    }
  }

  SECTION("the batches of an est-train-like pipeline are equal bit for bit") {
    at::Tensor images = at::randint(0, 256, {200, 5, 5}, at::kByte);
    auto scale = [](Element e) {
      e.features["image"] = e.features["image"].to(at::kFloat).div_(255.0).unsqueeze_(0);
      return e;
    };
    auto build = [&](int64_t calls) {
      return Dataset::FromTensors({{"image", images}}, at::arange(200, at::kLong))
          .map(scale, calls)
          .cache()
          .shuffle(100, 7)
          .repeat(2)
          .batch(16);
    };
    const auto sequential = Drain(build(1));
    REQUIRE(sequential.size() == 25);
    for (int64_t calls : kParallelCalls) {
      INFO("num_parallel_calls " << calls);
      const auto parallel = Drain(build(calls));
      REQUIRE(parallel.size() == sequential.size());
      for (size_t i = 0; i < parallel.size(); ++i) {
        CHECK(at::equal(parallel[i].features.at("image"), sequential[i].features.at("image")));
        CHECK(at::equal(parallel[i].labels, sequential[i].labels));
      }
    }
  }

  SECTION("fewer elements than workers, no elements, and the end repeated") {
    CHECK(Xs(Range(3).map(SquarePlusOne, 8)) == Ints{1, 2, 5});
    CHECK(Xs(Range(0).map(SquarePlusOne, 4)).empty());
    auto iterator = Range(2).map(SquarePlusOne, 2).make_iterator();
    CHECK(Xs(*iterator) == Ints{1, 2});
    CHECK_FALSE(iterator->next().has_value());
    CHECK_FALSE(iterator->next().has_value());
  }

  SECTION("the results are the function's tensors, not copies of them") {
    at::Tensor x = at::arange(50, at::kLong);
    auto elements = Drain(Dataset::FromTensors({{"x", x}}).map([](Element e) { return e; }, 3));
    REQUIRE(elements.size() == 50);
    for (size_t i = 0; i < elements.size(); ++i)
      CHECK(elements[i].features.at("x").data_ptr<int64_t>() == x.data_ptr<int64_t>() + i);
  }

  SECTION("the function is called exactly once per element") {
    std::atomic<int> calls{0};
    std::mutex mutex;
    Ints seen;
    Dataset mapped = Range(1000).map(
        [&](Element e) {
          ++calls;
          std::lock_guard<std::mutex> lock(mutex);
          seen.push_back(e.features.at("x").item<int64_t>());
          return e;
        },
        4);
    CHECK(Xs(mapped).size() == 1000);
    CHECK(calls.load() == 1000);
    std::sort(seen.begin(), seen.end());
    Ints expected(1000);
    for (int64_t i = 0; i < 1000; ++i) expected[static_cast<size_t>(i)] = i;
    CHECK(seen == expected);
  }
}

TEST_CASE("Dataset::map with num_parallel_calls surfaces exceptions in order", "[data]") {
  SECTION("an exception from the function comes at its element's place, then the rest") {
    const Strings expected = {"x=0,", "x=1,", "x=2,", "error: bad element 3",
                              "x=4,", "x=5,", "x=6,", "error: bad element 7",
                              "x=8,", "x=9,"};
    CHECK(Outcomes(Range(10).map(FailOnThreeModFour)) == expected);
    for (int64_t calls : kParallelCalls) {
      INFO("num_parallel_calls " << calls);
      CHECK(Outcomes(Range(10).map(FailOnThreeModFour, calls)) == expected);
    }
  }

  SECTION("an exception from the input comes after the elements before it, and stays") {
    auto failing_input = Range(10).map([](Element e) -> Element {
      if (e.features.at("x").item<int64_t>() == 5) throw est::DataError("element 5 is corrupt");
      return e;
    });
    const Strings expected = {"x=0,", "x=1,", "x=2,", "x=3,", "x=4,",
                              "error: element 5 is corrupt", "error: element 5 is corrupt"};
    CHECK(Outcomes(failing_input.map([](Element e) { return e; }, 3), 7) == expected);
  }
}

TEST_CASE("Dataset::map with num_parallel_calls stops its workers", "[data]") {
  SECTION("destroying an iterator early joins its workers, and no call follows") {
    std::atomic<int> produced{0};
    std::atomic<int> calls{0};
    auto slow = [&calls](Element e) {
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return e;
    };
    Dataset mapped = Endless(produced).map(slow, 4);
    { auto unused = mapped.make_iterator(); }
    {
      auto iterator = mapped.make_iterator();
      for (int64_t i = 0; i < 3; ++i) CHECK(iterator->next()->features.at("x").item<int64_t>() == i);
    }
    const int calls_after_destruction = calls.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(calls.load() == calls_after_destruction);
  }

  SECTION("nested parallel maps under a prefetch stop when destroyed") {
    std::atomic<int> produced{0};
    auto nested = Endless(produced)
                      .map([](Element e) { return e; }, 2)
                      .prefetch(2)
                      .map([](Element e) { return e; }, kAutotune)
                      .prefetch(1);
    auto iterator = nested.make_iterator();
    CHECK(iterator->next()->features.at("x").item<int64_t>() == 0);
    iterator.reset();
  }

  SECTION("a parallel map reads a bounded number of elements ahead") {
    std::atomic<int> produced{0};
    auto iterator = Endless(produced).map([](Element e) { return e; }, 2).make_iterator();
    CHECK(iterator->next()->features.at("x").item<int64_t>() == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(produced.load() >= 1);
    CHECK(produced.load() <= 16 * 2);
  }
}

TEST_CASE("Dataset::map with num_parallel_calls: thread state and arguments", "[data]") {
  SECTION("calls see the grad mode of the thread that made the iterator") {
    Dataset grad_enabled = Range(40).map(
        [](Element e) {
          e.features["x"] = at::scalar_tensor(at::GradMode::is_enabled() ? 1 : 0, at::kLong);
          return e;
        },
        2);
    CHECK(Xs(grad_enabled) == Ints(40, 1));
    at::NoGradGuard no_grad;
    CHECK(Xs(grad_enabled) == Ints(40, 0));
    // Made here, consumed on prefetch's thread: calls made by next() see this thread's mode.
    CHECK(Xs(grad_enabled.prefetch(1)) == Ints(40, 0));
  }

  SECTION("num_parallel_calls must be at least 1 or kAutotune") {
    auto identity = [](Element e) { return e; };
    CHECK_THROWS_AS(Range(1).map(identity, 0), DataError);
    CHECK_THROWS_WITH(Range(1).map(identity, 0),
                      "Dataset::map: num_parallel_calls is 0, expected at least 1 or kAutotune (-1)");
    CHECK_THROWS_WITH(Range(1).map(identity, -2), Catch::Contains("num_parallel_calls is -2"));
    CHECK(Xs(Range(3).map(identity, kAutotune)) == Ints{0, 1, 2});
  }
}
