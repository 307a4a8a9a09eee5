// FlightRecorder: a rank's last collective calls, their record as the ranks exchange it, and
// the diagnosis of a call that did not complete.

#include "distribute/collective/flight_recorder.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <thread>

#include "tests/log_capture.h"

namespace flight_recorder_test {
namespace {

using est::distribute::CollectiveCall;
using est::distribute::DescribeFlightRecord;
using est::distribute::DiagnoseCollective;
using est::distribute::FlightRecorder;
using est::distribute::LiveFlightRecords;
using est::distribute::LogFlightRecorders;
using est::distribute::RankFlightRecord;
using est::distribute::RecordedCall;
using State = CollectiveCall::State;

constexpr int64_t kNow = 1'000'000'000'000;  // µs: the moment of the diagnosis
constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kFourMb = 4 << 20;

CollectiveCall Call(uint64_t sequence, State state, int64_t left_us_before_now = 2 * kSecond,
                    std::string kind = "allreduce", int64_t bytes = kFourMb, std::string dtype = "float32") {
  CollectiveCall call;
  call.sequence = sequence;
  call.kind = std::move(kind);
  call.bytes = bytes;
  call.dtype = std::move(dtype);
  call.entered_us = kNow - left_us_before_now - 1000;
  call.left_us = state == State::kEntered ? 0 : kNow - left_us_before_now;
  call.state = state;
  return call;
}

RankFlightRecord Record(int rank, std::vector<CollectiveCall> calls, int64_t taken_before_now = 0) {
  RankFlightRecord record;
  record.collective = "gloo";
  record.rank = rank;
  record.world_size = 3;
  record.host = "10.0.0." + std::to_string(rank + 1);
  record.pid = 100 + rank;
  record.taken_us = kNow - taken_before_now;
  record.calls = std::move(calls);
  return record;
}

TEST_CASE("A flight recorder keeps the last calls, numbered alike on every rank, with how each ended", "[distribute]") {
  FlightRecorder recorder("gloo", 3);
  const uint64_t first = recorder.Enter("allreduce", 16, "float32");
  recorder.Leave(first, /*completed=*/true);
  const uint64_t second = recorder.Enter("broadcast", 8, "int64");
  recorder.Leave(second, /*completed=*/false);
  recorder.Enter("barrier", 0, "");
  recorder.Enter("allgather", 32, "float64");
  CHECK(first == 1);
  CHECK(second == 2);
  const std::vector<CollectiveCall> calls = recorder.Calls();
  REQUIRE(calls.size() == 3);  // the first fell out
  CHECK(calls[0].label() == "broadcast #2 (8 B int64)");
  CHECK(calls[0].state == State::kFailed);
  CHECK(calls[0].left_us >= calls[0].entered_us);
  CHECK(calls[1].label() == "barrier #3");
  CHECK(calls[1].state == State::kEntered);
  CHECK(calls[1].left_us == 0);
  CHECK(calls[2].label() == "allgather #4 (32 B float64)");

  recorder.Identify(3, 4, "node3");
  const RankFlightRecord record = recorder.Record();
  CHECK(record.collective == "gloo");
  CHECK(record.rank == 3);
  CHECK(record.world_size == 4);
  CHECK(record.host == "node3");
  const std::optional<RankFlightRecord> read = RankFlightRecord::Parse(record.Serialize());
  REQUIRE(read.has_value());
  CHECK(read->Serialize() == record.Serialize());
  CHECK(read->pid > 0);
  CHECK_FALSE(RankFlightRecord::Parse("").has_value());
  CHECK_FALSE(RankFlightRecord::Parse(record.Serialize().substr(0, 40)).has_value());
  CHECK_FALSE(RankFlightRecord::Parse(R"({"version": 2})").has_value());
}

TEST_CASE("A flight recorder takes calls on one thread while another takes records", "[distribute]") {
  FlightRecorder recorder("gloo", 8);
  std::thread caller([&] {
    for (int i = 0; i < 20000; ++i) recorder.Leave(recorder.Enter("allreduce", i, "float32"), true);
  });
  size_t longest = 0;
  for (int i = 0; i < 2000; ++i) longest = std::max(longest, recorder.Record().calls.size());
  caller.join();
  CHECK(longest <= 8);
  CHECK(recorder.Calls().back().sequence == 20000);
  CHECK(recorder.Calls().back().state == State::kCompleted);
}

TEST_CASE("A recorded call that an exception leaves is recorded as failed", "[distribute]") {
  FlightRecorder recorder("nccl", 4);
  {
    RecordedCall call(recorder, "allreduce", 16, est::distribute::RecordedDtype(c10::kBFloat16));
    call.completed();
  }
  try {
    RecordedCall call(recorder, "broadcast", 8, "int64");
    throw std::runtime_error("lost");
  } catch (const std::runtime_error&) {
  }
  const std::vector<CollectiveCall> calls = recorder.Calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].label() == "allreduce #1 (16 B bfloat16)");
  CHECK(calls[0].state == State::kCompleted);
  CHECK(calls[1].state == State::kFailed);
}

TEST_CASE("A record reads for people: the call a rank is inside, its last completed call, its last calls",
          "[distribute]") {
  RankFlightRecord record = Record(1, {Call(56, State::kCompleted, 9 * kSecond), Call(57, State::kCompleted),
                                       Call(58, State::kEntered, 2 * kSecond)});
  record.calls[1].entered_us = record.calls[1].left_us - 1200;  // 1.2 ms
  record.calls[2].entered_us = kNow - 5'100'000;
  CHECK(DescribeFlightRecord(record, kNow, 2) ==
        "flight recorder of gloo rank 1 of 3 (host 10.0.0.2, pid 101): 58 calls; inside allreduce #58 (4.0 MB float32) "
        "for 5.1 s; its last completed call is allreduce #57 (4.0 MB float32), 2.0 s ago; the last 2:\n"
        "  allreduce #57 (4.0 MB float32): completed in 1.2 ms, 2.0 s ago\n"
        "  allreduce #58 (4.0 MB float32): inside for 5.1 s");
  record.calls[2].state = State::kFailed;
  record.calls[2].left_us = kNow - kSecond;
  CHECK(DescribeFlightRecord(record, kNow, 1) ==
        "flight recorder of gloo rank 1 of 3 (host 10.0.0.2, pid 101): 58 calls; allreduce #58 (4.0 MB float32) failed "
        "1.0 s ago; its last completed call is allreduce #57 (4.0 MB float32), 2.0 s ago; the last 1:\n"
        "  allreduce #58 (4.0 MB float32): failed after 4.1 s, 1.0 s ago");
  CHECK(DescribeFlightRecord(Record(0, {}), kNow, 8) ==
        "flight recorder of gloo rank 0 of 3 (host 10.0.0.1, pid 100): no calls yet");
}

TEST_CASE("The live recorders are dumped on demand, and each logs itself at its end", "[distribute]") {
  const est::testing::LogCapture log;
  {
    FlightRecorder clean("gloo", 4);
    clean.Identify(0, 2, "10.1.1.1");
    clean.Leave(clean.Enter("allreduce", 64, "float32"), true);
    FlightRecorder stuck("gloo+shm", 4);
    stuck.Identify(1, 2, "10.1.1.2");
    stuck.Enter("broadcast", 8, "int64");
    std::vector<RankFlightRecord> live = LiveFlightRecords();
    live.erase(std::remove_if(live.begin(), live.end(),
                              [](const RankFlightRecord& record) { return record.host.rfind("10.1.1.", 0) != 0; }),
               live.end());
    REQUIRE(live.size() == 2);
    CHECK(live[0].collective == "gloo");
    CHECK(live[1].collective == "gloo+shm");
    LogFlightRecorders("received SIGUSR1");
    const std::string dumped = log.text();
    CHECK(dumped.find("warning: received SIGUSR1: flight recorder of gloo rank 0 of 2 (host 10.1.1.1, pid ") !=
          std::string::npos);
    CHECK(dumped.find("1 call; its last completed call is allreduce #1 (64 B float32)") != std::string::npos);
    CHECK(dumped.find("warning: received SIGUSR1: flight recorder of gloo+shm rank 1 of 2 (host 10.1.1.2, pid ") !=
          std::string::npos);
    CHECK(dumped.find("1 call; inside broadcast #1 (8 B int64) for ") != std::string::npos);
  }
  const std::string ended = log.text();
  CHECK(ended.find("warning: At its end, flight recorder of gloo+shm rank 1 of 2") != std::string::npos);
  CHECK(ended.find("info: Flight recorder of gloo rank 0 of 2 at its end: 1 call, all completed; the last is "
                   "allreduce #1 (64 B float32).") != std::string::npos);
  for (const RankFlightRecord& record : LiveFlightRecords()) CHECK(record.host.rfind("10.1.1.", 0) != 0);
}

TEST_CASE("The diagnosis names the rank that never entered the call, with its last completed call", "[distribute]") {
  // Rank 1 completed call 4 and never entered 5; ranks 0 and 2 wait in 5 (rank 0 observes).
  const std::vector<std::optional<RankFlightRecord>> records{
      Record(0, {Call(4, State::kCompleted), Call(5, State::kFailed)}),
      Record(1, {Call(3, State::kCompleted), Call(4, State::kCompleted, 5 * kSecond)}),
      Record(2, {Call(4, State::kCompleted), Call(5, State::kEntered)})};
  CHECK(DiagnoseCollective(5, records, {}, kNow) ==
        "rank 1 (host 10.0.0.2, pid 101) never entered call #5: its last completed call is allreduce #4 (4.0 MB "
        "float32), 5.0 s ago; ranks 0, 2 waited in allreduce #5 (4.0 MB float32)");
}

TEST_CASE("The diagnosis names a rank stuck inside a call that the others completed", "[distribute]") {
  const std::vector<std::optional<RankFlightRecord>> records{
      Record(0, {Call(5, State::kCompleted), Call(6, State::kFailed)}),
      Record(1, {Call(5, State::kCompleted), Call(6, State::kFailed)}),
      Record(2, {Call(4, State::kCompleted), Call(5, State::kEntered, 7 * kSecond)})};
  // Call 5 for the ranks that saw it complete: rank 2 is inside it.
  CHECK(DiagnoseCollective(5, records, {}, kNow) ==
        "rank 2 (host 10.0.0.3, pid 102) is stuck inside allreduce #5 (4.0 MB float32) since 7.0 s, which ranks 0, "
        "1 completed");
  // Call 6, as ranks 0 and 1 see it: rank 2 never entered it, being inside call 5.
  CHECK(DiagnoseCollective(6, records, {}, kNow) ==
        "rank 2 (host 10.0.0.3, pid 102) never entered call #6: it is inside allreduce #5 (4.0 MB float32) since "
        "7.0 s, and its last completed call is allreduce #4 (4.0 MB float32), 2.0 s ago; ranks 0, 1 waited in "
        "allreduce #6 (4.0 MB float32)");
}

TEST_CASE("The diagnosis names a rank that sent no record, from its last record when there is one", "[distribute]") {
  std::vector<std::optional<RankFlightRecord>> records{
      Record(0, {Call(4, State::kCompleted), Call(5, State::kFailed)}), std::nullopt};
  const std::vector<std::optional<RankFlightRecord>> earlier{
      std::nullopt, Record(1, {Call(4, State::kCompleted, 3 * kSecond)}, /*taken_before_now=*/kSecond)};
  CHECK(DiagnoseCollective(5, records, earlier, kNow) ==
        "rank 1 (host 10.0.0.2, pid 101) sent no record (stopped, gone, or cut off from the store); its record of "
        "1.0 s ago has it not yet in call #5, and its last completed call is allreduce #4 (4.0 MB float32), 3.0 s "
        "ago; rank 0 waited in allreduce #5 (4.0 MB float32)");
  // Where it runs only (published when the collective connected): the last call the others
  // completed with it.
  CHECK(DiagnoseCollective(5, records, {std::nullopt, Record(1, {})}, kNow) ==
        "rank 1 (host 10.0.0.2, pid 101) sent no record (stopped, gone, or cut off from the store); the last call the "
        "others completed with it is allreduce #4 (4.0 MB float32), 2.0 s ago; rank 0 waited in allreduce #5 (4.0 MB "
        "float32)");
  CHECK(DiagnoseCollective(5, records, {}, kNow) ==
        "rank 1 sent no record (stopped, gone, or cut off from the store); the last call the others completed with it "
        "is allreduce #4 (4.0 MB float32), 2.0 s ago; rank 0 waited in allreduce #5 (4.0 MB float32)");
}

TEST_CASE("The diagnosis names a desync: ranks in different calls under one number", "[distribute]") {
  const std::vector<std::optional<RankFlightRecord>> records{
      Record(0, {Call(5, State::kFailed)}),
      Record(1, {Call(5, State::kFailed, kSecond, "broadcast", 8, "int64")}),
      Record(2, {Call(5, State::kFailed)})};
  CHECK(DiagnoseCollective(5, records, {}, kNow) ==
        "desync at call #5: ranks 0, 2 in allreduce #5 (4.0 MB float32), rank 1 in broadcast #5 (8 B int64) (the "
        "ranks run different code, or different data shapes); ranks 0, 2 waited in allreduce #5 (4.0 MB float32); "
        "rank 1 waited in broadcast #5 (8 B int64)");
}

}  // namespace
}  // namespace flight_recorder_test
