#include "distribute/collective/flight_recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "distribute/rendezvous/error_text.h"

namespace est::distribute {
namespace {

using nlohmann::json;

const char* StateName(CollectiveCall::State state) {
  switch (state) {
    case CollectiveCall::State::kEntered: return "entered";
    case CollectiveCall::State::kCompleted: return "completed";
    case CollectiveCall::State::kFailed: return "failed";
  }
  return "entered";
}

std::optional<CollectiveCall::State> StateNamed(const std::string& name) {
  for (auto state : {CollectiveCall::State::kEntered, CollectiveCall::State::kCompleted, CollectiveCall::State::kFailed})
    if (name == StateName(state)) return state;
  return std::nullopt;
}

// "4.0 MB", "512 B".
std::string Bytes(int64_t bytes) {
  char text[32];
  if (bytes >= (1 << 20))
    std::snprintf(text, sizeof(text), "%.1f MB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= (1 << 10))
    std::snprintf(text, sizeof(text), "%.1f KB", static_cast<double>(bytes) / (1 << 10));
  else
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  return text;
}

// "5.1 s".
std::string Ago(int64_t from_us, int64_t now_us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(std::max<int64_t>(now_us - from_us, 0)) / 1e6);
  return text;
}

// What one rank's record says of call `sequence`.
struct Standing {
  const CollectiveCall* call = nullptr;            // its call `sequence`, if kept
  const CollectiveCall* last_completed = nullptr;  // its latest completed call
  const CollectiveCall* last_entered = nullptr;    // its latest call
};

Standing StandingIn(const RankFlightRecord& record, uint64_t sequence) {
  Standing standing;
  for (const CollectiveCall& call : record.calls) {
    if (call.sequence == sequence) standing.call = &call;
    if (call.state == CollectiveCall::State::kCompleted) standing.last_completed = &call;
    standing.last_entered = &call;
  }
  return standing;
}

// "its last completed call is allreduce #57 (1.2 MB float32), 5.1 s ago", or that it has none.
std::string LastCompleted(const Standing& standing, int64_t now_us) {
  if (standing.last_completed == nullptr) return "it has completed no call";
  return "its last completed call is " + standing.last_completed->label() + ", " +
         Ago(standing.last_completed->left_us, now_us) + " ago";
}

// The latest call before `sequence` that every rank that sent a record completed: one the
// silent ranks took part in too, since every rank joins each call.
const CollectiveCall* LastSharedCall(const std::vector<std::optional<RankFlightRecord>>& records, uint64_t sequence) {
  const CollectiveCall* shared = nullptr;
  for (uint64_t candidate = sequence - 1; candidate > 0 && shared == nullptr; --candidate) {
    bool everywhere = true;
    const CollectiveCall* found = nullptr;
    for (const auto& record : records) {
      if (!record) continue;
      const CollectiveCall* call = StandingIn(*record, candidate).call;
      if (call == nullptr) return nullptr;  // older than some recorder keeps
      everywhere = everywhere && call->state == CollectiveCall::State::kCompleted;
      found = call;
    }
    if (found == nullptr) return nullptr;
    if (everywhere) shared = found;
  }
  return shared;
}

std::string Where(const RankFlightRecord& record) {
  return "rank " + std::to_string(record.rank) + " (host " + record.host + ", pid " + std::to_string(record.pid) + ")";
}

}  // namespace

std::string CollectiveCall::label() const {
  std::string text = kind + " #" + std::to_string(sequence);
  if (kind != "barrier") text += " (" + Bytes(bytes) + (dtype.empty() ? "" : " " + dtype) + ")";
  return text;
}

std::string RankFlightRecord::Serialize() const {
  json calls_json = json::array();
  for (const CollectiveCall& call : calls)
    calls_json.push_back({call.sequence, call.kind, call.bytes, call.dtype, call.entered_us, call.left_us,
                          StateName(call.state)});
  return json{{"version", 1}, {"rank", rank},     {"host", host},
              {"pid", pid},   {"taken_us", taken_us}, {"calls", calls_json}}
      .dump();
}

std::optional<RankFlightRecord> RankFlightRecord::Parse(const std::string& text) {
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || parsed.value("version", 0) != 1) return std::nullopt;
  try {
    RankFlightRecord record;
    record.rank = parsed.at("rank").get<int>();
    record.host = parsed.at("host").get<std::string>();
    record.pid = parsed.at("pid").get<int64_t>();
    record.taken_us = parsed.at("taken_us").get<int64_t>();
    for (const json& entry : parsed.at("calls")) {
      CollectiveCall call;
      call.sequence = entry.at(0).get<uint64_t>();
      call.kind = entry.at(1).get<std::string>();
      call.bytes = entry.at(2).get<int64_t>();
      call.dtype = entry.at(3).get<std::string>();
      call.entered_us = entry.at(4).get<int64_t>();
      call.left_us = entry.at(5).get<int64_t>();
      const std::optional<CollectiveCall::State> state = StateNamed(entry.at(6).get<std::string>());
      if (!state) return std::nullopt;
      call.state = *state;
      record.calls.push_back(std::move(call));
    }
    return record;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

FlightRecorder::FlightRecorder(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

uint64_t FlightRecorder::Enter(std::string kind, int64_t bytes, std::string dtype) {
  CollectiveCall call;
  call.kind = std::move(kind);
  call.bytes = bytes;
  call.dtype = std::move(dtype);
  call.entered_us = UnixMicros();
  const std::lock_guard<std::mutex> lock(mutex_);
  call.sequence = ++entered_;
  if (calls_.size() == capacity_) calls_.pop_front();
  calls_.push_back(std::move(call));
  return entered_;
}

void FlightRecorder::Leave(uint64_t sequence, bool completed) {
  const int64_t now = UnixMicros();
  const std::lock_guard<std::mutex> lock(mutex_);
  for (auto call = calls_.rbegin(); call != calls_.rend(); ++call) {
    if (call->sequence != sequence) continue;
    call->left_us = now;
    call->state = completed ? CollectiveCall::State::kCompleted : CollectiveCall::State::kFailed;
    return;
  }
}

std::vector<CollectiveCall> FlightRecorder::Calls() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return {calls_.begin(), calls_.end()};
}

RankFlightRecord FlightRecorder::Record(int rank, const std::string& host) const {
  RankFlightRecord record;
  record.rank = rank;
  record.host = host;
  record.pid = ::getpid();
  record.taken_us = UnixMicros();
  record.calls = Calls();
  return record;
}

std::string DiagnoseCollective(uint64_t sequence, const std::vector<std::optional<RankFlightRecord>>& records,
                               const std::vector<std::optional<RankFlightRecord>>& earlier, int64_t now_us) {
  std::vector<std::string> findings;
  std::map<std::string, std::vector<int>> waiting;  // a label of call `sequence` -> ranks inside it or failed in it
  std::map<std::string, std::vector<int>> desync;   // each label of call `sequence` -> ranks in that call
  std::vector<int> passed;                          // ranks that completed call `sequence`
  std::vector<std::pair<int, Standing>> stuck;      // ranks inside call `sequence` (decided once `passed` is known)
  for (size_t rank = 0; rank < records.size(); ++rank) {
    const int r = static_cast<int>(rank);
    if (!records[rank]) {
      const RankFlightRecord* last = rank < earlier.size() && earlier[rank] ? &*earlier[rank] : nullptr;
      std::string finding = (last != nullptr ? Where(*last) : "rank " + std::to_string(r)) +
                            " sent no record (stopped, gone, or cut off from the store)";
      if (last != nullptr && !last->calls.empty()) {
        const Standing standing = StandingIn(*last, sequence);
        finding += "; its record of " + Ago(last->taken_us, now_us) + " ago has it " +
                   (standing.call != nullptr ? "inside " + standing.call->label()
                                             : "not yet in call #" + std::to_string(sequence)) +
                   ", and " + LastCompleted(standing, now_us);
      } else if (const CollectiveCall* shared = LastSharedCall(records, sequence)) {
        finding += "; the last call the others completed with it is " + shared->label() + ", " +
                   Ago(shared->left_us, now_us) + " ago";
      }
      findings.push_back(finding);
      continue;
    }
    const RankFlightRecord& record = *records[rank];
    const Standing standing = StandingIn(record, sequence);
    if (standing.call == nullptr) {
      if (standing.last_entered != nullptr && standing.last_entered->sequence > sequence) {
        passed.push_back(r);  // the call fell out of its recorder: it went on long since
        continue;
      }
      std::string finding = Where(record) + " never entered call #" + std::to_string(sequence) + ": ";
      if (standing.last_entered != nullptr && standing.last_entered->state == CollectiveCall::State::kEntered)
        finding += "it is inside " + standing.last_entered->label() + " since " +
                   Ago(standing.last_entered->entered_us, now_us) + ", and ";
      findings.push_back(finding + LastCompleted(standing, now_us));
      continue;
    }
    desync[standing.call->kind + " " + Bytes(standing.call->bytes) + " " + standing.call->dtype].push_back(r);
    if (standing.call->state == CollectiveCall::State::kCompleted)
      passed.push_back(r);
    else
      stuck.emplace_back(r, standing);
  }
  if (desync.size() > 1) {
    std::string finding = "desync at call #" + std::to_string(sequence) + ":";
    std::string separator = " ";
    for (const auto& [what, ranks] : desync) {
      const RankFlightRecord& first = *records[static_cast<size_t>(ranks.front())];
      finding += separator + DescribeRanks(ranks) + " in " + StandingIn(first, sequence).call->label();
      separator = ", ";
    }
    findings.insert(findings.begin(), finding + " (the ranks run different code, or different data shapes)");
  }
  for (const auto& [rank, standing] : stuck) {
    // Inside the call while others left it: this rank's part is what does not finish.
    if (!passed.empty() && standing.call->state == CollectiveCall::State::kEntered) {
      findings.push_back(Where(*records[static_cast<size_t>(rank)]) + " is stuck inside " + standing.call->label() +
                         " since " + Ago(standing.call->entered_us, now_us) + ", which " + DescribeRanks(passed) +
                         " completed");
    } else {
      waiting[standing.call->label()].push_back(rank);
    }
  }
  std::string text;
  for (const std::string& finding : findings) text += (text.empty() ? "" : "; ") + finding;
  if (text.empty()) text = "every rank that answered entered call #" + std::to_string(sequence);
  for (const auto& [label, ranks] : waiting) text += "; " + DescribeRanks(ranks) + " waited in " + label;
  if (!passed.empty() && findings.empty()) text += "; " + DescribeRanks(passed) + " completed it";
  return text;
}

int64_t UnixMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace est::distribute
