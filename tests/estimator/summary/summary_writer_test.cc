#include "estimator/summary/summary_writer.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "common/tfrecord_file.h"
#include "estimator/summary/event.pb.h"
#include "estimator/summary/event_reader.h"
#include "tests/test_util.h"

using namespace est;
namespace fs = std::filesystem;
using est::testing::CountEntries;
using est::testing::FreshTempDir;

namespace {

/// Every Event of an event file, parsed with the generated proto classes.
std::vector<tfevents::Event> ReadEvents(const std::string& path) {
  tfrecord::RecordFileReader reader(path);
  std::vector<tfevents::Event> events;
  std::string record;
  while (reader.next(&record)) {
    tfevents::Event event;
    REQUIRE(event.ParseFromArray(record.data(), static_cast<int>(record.size())));
    events.push_back(event);
  }
  return events;
}

double Now() { return static_cast<double>(::time(nullptr)); }

}  // namespace

TEST_CASE("summary: SummaryWriter creates logdir and a TensorFlow-named event file", "[summary]") {
  const fs::path logdir = FreshTempDir("writer_name") / "nested" / "eval";
  SummaryWriter writer(logdir.string());
  CHECK(writer.logdir() == logdir.string());
  const fs::path path(writer.path());
  CHECK(path.parent_path() == logdir);
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof(host) - 1) == 0);
  const std::string name = path.filename().string();
  const std::string prefix = "events.out.tfevents.";
  REQUIRE(name.rfind(prefix, 0) == 0);
  const std::string rest = name.substr(prefix.size());
  const std::string seconds = rest.substr(0, rest.find('.'));
  CHECK(std::stod(seconds) == Approx(Now()).margin(5));
  CHECK(rest.substr(seconds.size() + 1) == host);
  CHECK(fs::is_regular_file(path));
}

TEST_CASE("summary: SummaryWriter starts every file with the brain.Event:2 version record", "[summary]") {
  const fs::path logdir = FreshTempDir("writer_version");
  SummaryWriter writer(logdir.string());
  const std::vector<tfevents::Event> events = ReadEvents(writer.path());
  REQUIRE(events.size() == 1);
  CHECK(events[0].file_version() == "brain.Event:2");
  CHECK(events[0].wall_time() == Approx(Now()).margin(5));
}

TEST_CASE("summary: SummaryWriter writes scalars, grouped scalars and session logs", "[summary]") {
  const fs::path logdir = FreshTempDir("writer_events");
  SummaryWriter writer(logdir.string());
  writer.add_session_log(SessionStatus::kStart, 0);
  writer.add_scalar("loss", 2.5, 1);
  writer.add_scalars({{"loss", 0.1}, {"accuracy", 0.875}}, 100);
  writer.add_scalars({}, 150);
  writer.add_session_log(SessionStatus::kCheckpoint, 100, "/models/m/model.ckpt-100");

  const std::vector<tfevents::Event> events = ReadEvents(writer.path());
  REQUIRE(events.size() == 5);
  CHECK(events[1].session_log().status() == tfevents::SessionLog::START);
  CHECK(events[1].step() == 0);
  REQUIRE(events[2].summary().value_size() == 1);
  CHECK(events[2].step() == 1);
  CHECK(events[2].summary().value(0).tag() == "loss");
  CHECK(events[2].summary().value(0).simple_value() == 2.5f);
  CHECK(events[2].wall_time() == Approx(Now()).margin(5));
  REQUIRE(events[3].summary().value_size() == 2);
  CHECK(events[3].step() == 100);
  CHECK(events[3].summary().value(0).tag() == "accuracy");
  CHECK(events[3].summary().value(0).simple_value() == 0.875f);
  CHECK(events[3].summary().value(1).tag() == "loss");
  CHECK(events[3].summary().value(1).simple_value() == 0.1f);
  CHECK(events[4].session_log().status() == tfevents::SessionLog::CHECKPOINT);
  CHECK(events[4].session_log().checkpoint_path() == "/models/m/model.ckpt-100");
  CHECK(events[4].step() == 100);
}

TEST_CASE("summary: SummaryWriter records are readable before flush or destruction", "[summary]") {
  const fs::path logdir = FreshTempDir("writer_visible");
  SummaryWriter writer(logdir.string());
  writer.add_scalar("loss", 1.5, 7);
  const std::vector<ScalarEvent> scalars = ReadScalarEvents(writer.path());
  REQUIRE(scalars.size() == 1);
  CHECK(scalars[0].step == 7);
  writer.flush();
  CHECK(ReadScalarEvents(writer.path()).size() == 1);
}

// Found by event_roundtrip_fuzzer: a tag or checkpoint path that is not valid UTF-8 made a
// file that ReadScalarEvents (and TensorBoard) rejected as "not an Event".
TEST_CASE("summary: SummaryWriter stores tags and checkpoint paths that are not UTF-8 readably", "[summary]") {
  auto dir = FreshTempDir("summary_not_utf8");
  std::string path;
  {
    SummaryWriter writer(dir.string());
    path = writer.path();
    writer.add_scalar("lo\xF0ss", 1.5, 3);
    writer.add_session_log(SessionStatus::kCheckpoint, 3, "/tmp/m\xE9/model.ckpt-3");
  }
  const std::vector<ScalarEvent> scalars = ReadScalarEvents(path);
  REQUIRE(scalars.size() == 1);
  CHECK(scalars[0].tag == "lo\xEF\xBF\xBDss");
  CHECK(scalars[0].value == 1.5);
  const std::vector<tfevents::Event> events = ReadEvents(path);
  REQUIRE(events.size() == 3);
  CHECK(events[2].session_log().checkpoint_path() == "/tmp/m\xEF\xBF\xBD/model.ckpt-3");
}

TEST_CASE("summary: SummaryWriters created together on one logdir get distinct files", "[summary]") {
  const fs::path logdir = FreshTempDir("writer_distinct");
  SummaryWriter first(logdir.string());
  SummaryWriter second(logdir.string());
  SummaryWriter third(logdir.string());
  CHECK(first.path() != second.path());
  CHECK(second.path() != third.path());
  CHECK(CountEntries(logdir) == 3);
  first.add_scalar("a", 1, 1);
  second.add_scalar("b", 2, 1);
  CHECK(ReadScalarEvents(first.path()).at(0).tag == "a");
  CHECK(ReadScalarEvents(second.path()).at(0).tag == "b");
}

TEST_CASE("summary: SummaryWriter is safe to share between threads", "[summary]") {
  const fs::path logdir = FreshTempDir("writer_threads");
  SummaryWriter writer(logdir.string());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      for (int i = 0; i < kPerThread; ++i) writer.add_scalar("thread" + std::to_string(t), i, i);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<ScalarEvent> scalars = ReadScalarEvents(writer.path());
  REQUIRE(scalars.size() == kThreads * kPerThread);
  std::vector<int> next(kThreads, 0);
  for (const ScalarEvent& scalar : scalars) {
    const int t = std::stoi(scalar.tag.substr(6));
    CHECK(scalar.step == next[t]);
    CHECK(scalar.value == next[t]);
    ++next[t];
  }
}

TEST_CASE("summary: SummaryWriterFor shares one writer per directory", "[summary]") {
  const fs::path root = FreshTempDir("writer_cache");
  const std::string dir = (root / "train").string();
  const auto writer = SummaryWriterFor(dir);
  CHECK(writer == SummaryWriterFor(dir + "/"));
  CHECK(writer == SummaryWriterFor((root / "eval" / ".." / "train").string()));
  const auto other = SummaryWriterFor((root / "eval").string());
  CHECK(other != writer);
  CHECK(CountEntries(root / "train") == 1);
  CHECK(fs::path(other->path()).parent_path() == root / "eval");

  // The directory removed and made again (a fresh run in this process): a new event file,
  // which gets the records.
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto renewed = SummaryWriterFor(dir);
  CHECK(renewed != writer);
  renewed->add_scalar("loss", 1.5, 3);
  REQUIRE(ListEventFiles(dir).size() == 1);
  const std::vector<ScalarEvent> events = ReadScalarEvents(ListEventFiles(dir).front());
  REQUIRE(events.size() == 1);
  CHECK(events.front().value == 1.5);
  CHECK(renewed == SummaryWriterFor(dir));
}

TEST_CASE("summary: SummaryWriter names the path it cannot create", "[summary]") {
  const fs::path root = FreshTempDir("writer_error");
  WriteFileAtomic((root / "file").string(), "not a directory");
  CHECK_THROWS_AS(SummaryWriter((root / "file" / "logs").string()), IoError);
  CHECK_THROWS_WITH(SummaryWriter((root / "file" / "logs").string()),
                    Catch::Matchers::Contains((root / "file").string()));
}
