#include "distribute/collective/flight_recorder.h"

#include <ATen/core/TensorBase.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/json_from_outside.h"
#include "common/logging.h"
#include "distribute/rendezvous/error_text.h"

namespace est::distribute {
namespace {

using nlohmann::json;

// The calls a log shows of each recorder: enough to see the rhythm of the steps before a hang.
constexpr size_t kLoggedCalls = 16;

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

// How long a call took or has lasted: "850 us", "1.2 ms", "5.1 s".
std::string Duration(int64_t us) {
  char text[32];
  if (us < 1000)
    std::snprintf(text, sizeof(text), "%lld us", static_cast<long long>(std::max<int64_t>(us, 0)));
  else if (us < 1'000'000)
    std::snprintf(text, sizeof(text), "%.1f ms", static_cast<double>(us) / 1e3);
  else
    std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(us) / 1e6);
  return text;
}

// The machine's name, where a recorder is not told its address.
std::string MachineName() {
  char name[256] = {0};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? name : "this host";
}

// "1 call", "58 calls".
std::string CallCount(uint64_t calls) { return std::to_string(calls) + (calls == 1 ? " call" : " calls"); }

// The process's live recorders, in the order they began. Never destroyed: a recorder may end
// during the process's exit, after function-local statics.
struct LiveRecorders {
  std::mutex mutex;
  std::vector<const FlightRecorder*> recorders;
};
LiveRecorders& Live() {
  static auto* live = new LiveRecorders;
  return *live;
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

// "  allreduce #57 (4.0 MB float32): completed in 1.2 ms, 5.3 s ago".
std::string CallLine(const CollectiveCall& call, int64_t now_us) {
  std::string line = "  " + call.label() + ": ";
  switch (call.state) {
    case CollectiveCall::State::kEntered: return line + "inside for " + Duration(now_us - call.entered_us);
    case CollectiveCall::State::kCompleted: line += "completed in "; break;
    case CollectiveCall::State::kFailed: line += "failed after "; break;
  }
  return line + Duration(call.left_us - call.entered_us) + ", " + Ago(call.left_us, now_us) + " ago";
}

// Whether a record ends in trouble: a call that failed or never left.
bool Troubled(const RankFlightRecord& record) {
  return std::any_of(record.calls.begin(), record.calls.end(),
                     [](const CollectiveCall& call) { return call.state != CollectiveCall::State::kCompleted; });
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
  return json{{"version", 1},         {"collective", collective}, {"rank", rank},           {"world_size", world_size},
              {"host", host},         {"pid", pid},               {"taken_us", taken_us}, {"calls", calls_json}}
      .dump();
}

std::optional<RankFlightRecord> RankFlightRecord::Parse(const std::string& text) {
  const json parsed = ParseJsonFromOutside(text).value;
  if (!parsed.is_object() || parsed.value("version", 0) != 1) return std::nullopt;
  try {
    RankFlightRecord record;
    record.collective = parsed.at("collective").get<std::string>();
    record.rank = parsed.at("rank").get<int>();
    record.world_size = parsed.at("world_size").get<int>();
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

FlightRecorder::FlightRecorder(std::string collective, size_t capacity)
    : collective_(std::move(collective)), capacity_(std::max<size_t>(capacity, 1)), host_(MachineName()) {
  LiveRecorders& live = Live();
  const std::lock_guard<std::mutex> lock(live.mutex);
  live.recorders.push_back(this);
}

FlightRecorder::~FlightRecorder() {
  {
    LiveRecorders& live = Live();
    const std::lock_guard<std::mutex> lock(live.mutex);
    live.recorders.erase(std::find(live.recorders.begin(), live.recorders.end(), this));
  }
  const RankFlightRecord record = Record();
  if (record.calls.empty()) return;
  if (Troubled(record)) {
    Log().warn("At its end, {}", DescribeFlightRecord(record, UnixMicros(), kLoggedCalls));
  } else {
    Log().info("Flight recorder of {} rank {} of {} at its end: {}, all completed; the last is {}.",
               record.collective, record.rank, record.world_size, CallCount(record.calls.back().sequence),
               record.calls.back().label());
  }
}

void FlightRecorder::Identify(int rank, int world_size, std::string host) {
  if (host.empty()) host = MachineName();
  const std::lock_guard<std::mutex> lock(mutex_);
  rank_ = rank;
  world_size_ = world_size;
  host_ = std::move(host);
}

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

RankFlightRecord FlightRecorder::Record() const {
  RankFlightRecord record;
  record.collective = collective_;
  record.pid = ::getpid();
  record.taken_us = UnixMicros();
  const std::lock_guard<std::mutex> lock(mutex_);
  record.rank = rank_;
  record.world_size = world_size_;
  record.host = host_;
  record.calls.assign(calls_.begin(), calls_.end());
  return record;
}

RecordedCall::RecordedCall(FlightRecorder& recorder, std::string kind, int64_t bytes, std::string dtype)
    : recorder_(recorder), sequence_(recorder.Enter(std::move(kind), bytes, std::move(dtype))) {}

RecordedCall::RecordedCall(FlightRecorder& recorder, std::string kind, const at::TensorBase& tensor)
    : RecordedCall(recorder, std::move(kind), static_cast<int64_t>(tensor.nbytes()),
                   RecordedDtype(tensor.scalar_type())) {}

RecordedCall::~RecordedCall() {
  if (!left_) recorder_.Leave(sequence_, /*completed=*/false);
}

void RecordedCall::completed() {
  recorder_.Leave(sequence_, /*completed=*/true);
  left_ = true;
}

void RecordedCall::failed() {
  recorder_.Leave(sequence_, /*completed=*/false);
  left_ = true;
}

std::string RecordedDtype(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat: return "float32";
    case c10::kDouble: return "float64";
    case c10::kHalf: return "float16";
    case c10::kBFloat16: return "bfloat16";
    case c10::kInt: return "int32";
    case c10::kLong: return "int64";
    default: return c10::toString(type);
  }
}

std::vector<RankFlightRecord> LiveFlightRecords() {
  LiveRecorders& live = Live();
  const std::lock_guard<std::mutex> lock(live.mutex);
  std::vector<RankFlightRecord> records;
  for (const FlightRecorder* recorder : live.recorders) records.push_back(recorder->Record());
  return records;
}

std::string DescribeFlightRecord(const RankFlightRecord& record, int64_t now_us, size_t last_calls) {
  std::string text = "flight recorder of " + record.collective + " rank " + std::to_string(record.rank) + " of " +
                     std::to_string(record.world_size) + " (host " + record.host + ", pid " +
                     std::to_string(record.pid) + "): ";
  if (record.calls.empty()) return text + "no calls yet";
  const CollectiveCall& last = record.calls.back();
  text += CallCount(last.sequence);
  if (last.state == CollectiveCall::State::kEntered)
    text += "; inside " + last.label() + " for " + Duration(now_us - last.entered_us);
  else if (last.state == CollectiveCall::State::kFailed)
    text += "; " + last.label() + " failed " + Ago(last.left_us, now_us) + " ago";
  text += "; " + LastCompleted(StandingIn(record, last.sequence), now_us);
  const size_t shown = std::min(last_calls, record.calls.size());
  if (shown > 0) text += "; the last " + std::to_string(shown) + ":";
  for (size_t i = record.calls.size() - shown; i < record.calls.size(); ++i)
    text += "\n" + CallLine(record.calls[i], now_us);
  return text;
}

void LogFlightRecorders(const std::string& reason) {
  const std::vector<RankFlightRecord> records = LiveFlightRecords();
  if (records.empty()) {
    Log().warn("{}: this process has no collective, so no flight recorder.", reason);
    return;
  }
  const int64_t now = UnixMicros();
  for (const RankFlightRecord& record : records)
    Log().warn("{}: {}", reason, DescribeFlightRecord(record, now, kLoggedCalls));
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
