#include "estimator/summary/event_reader.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "estimator/summary/event.pb.h"
#include "estimator/summary/summary_writer.h"
#include "common/tfrecord.h"
#include "tests/test_util.h"

using namespace est;
namespace fs = std::filesystem;
using est::testing::FreshTempDir;

namespace {

/// One serialized Event{step, summary{value{tag, simple_value} for each of `values`}}.
std::string ScalarEventRecord(int64_t step, const std::map<std::string, float>& values) {
  tfevents::Event event;
  event.set_wall_time(1.5e9);
  event.set_step(step);
  for (const auto& [tag, value] : values) {
    tfevents::Summary::Value* summary_value = event.mutable_summary()->add_value();
    summary_value->set_tag(tag);
    summary_value->set_simple_value(value);
  }
  return tfrecord::FrameRecord(event.SerializeAsString());
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

}  // namespace

TEST_CASE("summary: ReadScalarEvents returns what SummaryWriter wrote", "[summary]") {
  const fs::path logdir = FreshTempDir("reader_round_trip");
  std::string path;
  {
    SummaryWriter writer(logdir.string());
    writer.add_session_log(SessionStatus::kStart, 0);
    writer.add_scalar("loss", 2.25, 0);
    writer.add_scalars({{"accuracy", 0.1}, {"loss", -3.0}}, 500);
    writer.add_scalar("global_step/sec", 137.125, 1'000'000'000'000LL);
    path = writer.path();
  }
  const std::vector<ScalarEvent> scalars = ReadScalarEvents(path);
  REQUIRE(scalars.size() == 4);
  CHECK(scalars[0].tag == "loss");
  CHECK(scalars[0].step == 0);
  CHECK(scalars[0].value == 2.25);
  CHECK(scalars[1].tag == "accuracy");
  CHECK(scalars[1].step == 500);
  CHECK(scalars[1].value == static_cast<double>(0.1f));
  CHECK(scalars[2].tag == "loss");
  CHECK(scalars[2].value == -3.0);
  CHECK(scalars[3].tag == "global_step/sec");
  CHECK(scalars[3].step == 1'000'000'000'000LL);
  CHECK(scalars[3].value == 137.125);
  CHECK(scalars[3].wall_time >= scalars[0].wall_time);
  CHECK(scalars[0].wall_time > 1.5e9);
}

TEST_CASE("summary: ReadScalarEvents names the file and offset of a corrupted record", "[summary]") {
  const fs::path dir = FreshTempDir("reader_corrupt");
  const std::string first = ScalarEventRecord(1, {{"loss", 1.0f}});
  std::string bytes = first + ScalarEventRecord(2, {{"loss", 2.0f}}) + ScalarEventRecord(3, {{"loss", 3.0f}});
  bytes[first.size() + tfrecord::kHeaderSize + 3] ^= 0x04;
  const fs::path path = dir / "events.out.tfevents.1.host";
  WriteBytes(path, bytes);
  CHECK_THROWS_AS(ReadScalarEvents(path.string()), DataError);
  CHECK_THROWS_WITH(ReadScalarEvents(path.string()),
                    Catch::Matchers::Contains(path.string()) &&
                        Catch::Matchers::Contains("offset " + std::to_string(first.size())));
}

TEST_CASE("summary: ReadScalarEvents rejects a record that is not an Event", "[summary]") {
  const fs::path dir = FreshTempDir("reader_not_event");
  const std::string first = ScalarEventRecord(1, {{"loss", 1.0f}});
  const fs::path path = dir / "events.out.tfevents.1.host";
  WriteBytes(path, first + tfrecord::FrameRecord("\xff\xff\xff"));
  CHECK_THROWS_AS(ReadScalarEvents(path.string()), DataError);
  CHECK_THROWS_WITH(ReadScalarEvents(path.string()),
                    Catch::Matchers::Contains(path.string()) &&
                        Catch::Matchers::Contains("offset " + std::to_string(first.size())));
}

TEST_CASE("summary: ReadScalarEvents ignores a truncated last record", "[summary]") {
  const fs::path dir = FreshTempDir("reader_truncated");
  const std::string last = ScalarEventRecord(2, {{"loss", 2.0f}});
  const fs::path path = dir / "events.out.tfevents.1.host";
  WriteBytes(path, ScalarEventRecord(1, {{"loss", 1.0f}}) + last.substr(0, last.size() - 3));
  const std::vector<ScalarEvent> scalars = ReadScalarEvents(path.string());
  REQUIRE(scalars.size() == 1);
  CHECK(scalars[0].step == 1);
}

TEST_CASE("summary: ReadScalarEvents names a missing file", "[summary]") {
  const fs::path dir = FreshTempDir("reader_missing");
  CHECK_THROWS_AS(ReadScalarEvents((dir / "events.out.tfevents.1.none").string()), IoError);
  CHECK_THROWS_WITH(ReadScalarEvents((dir / "events.out.tfevents.1.none").string()),
                    Catch::Matchers::Contains("events.out.tfevents.1.none"));
}

TEST_CASE("summary: ListEventFiles lists event files oldest first", "[summary]") {
  const fs::path dir = FreshTempDir("reader_list");
  for (const char* name :
       {"events.out.tfevents.1000000000.b", "checkpoint", "events.out.tfevents.999999999.a",
        "events.out.tfevents.1000000000.b.1", "model.ckpt-1.index"}) {
    WriteBytes(dir / name, "");
  }
  fs::create_directories(dir / "events.out.tfevents.1.directory");
  CHECK(ListEventFiles(dir.string()) == std::vector<std::string>{
                                            (dir / "events.out.tfevents.999999999.a").string(),
                                            (dir / "events.out.tfevents.1000000000.b").string(),
                                            (dir / "events.out.tfevents.1000000000.b.1").string(),
                                        });
  CHECK(ListEventFiles((dir / "absent").string()).empty());
}

TEST_CASE("summary: ReadEvalMetrics merges every file, later values winning", "[summary]") {
  const fs::path dir = FreshTempDir("reader_eval_metrics");
  WriteBytes(dir / "events.out.tfevents.999999999.evaluator",
             ScalarEventRecord(100, {{"accuracy", 0.5f}, {"loss", 2.0f}}) +
                 ScalarEventRecord(200, {{"accuracy", 0.75f}}));
  WriteBytes(dir / "events.out.tfevents.1000000000.evaluator",
             ScalarEventRecord(200, {{"accuracy", 0.875f}, {"loss", 1.0f}}) +
                 ScalarEventRecord(200, {{"loss", 0.5f}}) + ScalarEventRecord(300, {{"accuracy", 1.0f}}));
  WriteBytes(dir / "notes.txt", "not an event file");
  const auto metrics = ReadEvalMetrics(dir.string());
  CHECK(metrics == std::map<int64_t, std::map<std::string, double>>{
                       {100, {{"accuracy", 0.5}, {"loss", 2.0}}},
                       {200, {{"accuracy", 0.875}, {"loss", 0.5}}},
                       {300, {{"accuracy", 1.0}}},
                   });
}

TEST_CASE("summary: ReadEvalMetrics of a directory without event files is empty", "[summary]") {
  const fs::path dir = FreshTempDir("reader_eval_empty");
  CHECK(ReadEvalMetrics(dir.string()).empty());
  CHECK(ReadEvalMetrics((dir / "absent").string()).empty());
}
