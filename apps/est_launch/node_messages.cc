#include "apps/est_launch/node_messages.h"

#include <cmath>
#include <limits>
#include <optional>
#include <iterator>
#include <utility>

#include "apps/est_launch/node_channel.h"
#include "common/error.h"

namespace est_launch {
namespace {

using nlohmann::json;

// The key of each kind of message, in the order a message's kind is looked for.
constexpr const char* kHello = "hello";
constexpr const char* kRefusal = "error";
constexpr const char* kStart = "start";
constexpr const char* kStop = "stop";
constexpr const char* kVerdict = "verdict";
constexpr const char* kFailed = "failed";
constexpr const char* kEnded = "ended";
constexpr const char* kLost = "lost";
constexpr const char* kFlightRecorder = "flight_recorder";

// The most tasks a host offers, as many as the ports that follow its first.
constexpr int kMaxHostTasks = 65535;

// A value as a message quotes it: at most 200 characters.
std::string Shown(const json& value) {
  constexpr size_t kMaxShown = 200;
  const std::string text = value.dump();
  return text.size() <= kMaxShown ? text : text.substr(0, kMaxShown) + "...";
}

[[noreturn]] void Malformed(const char* kind, const std::string& what) {
  EST_THROW(est::ConfigError, "a malformed '", kind, "' message: ", what);
}

const json& Member(const json& object, const char* name, const char* kind) {
  if (!object.is_object()) Malformed(kind, "it is " + Shown(object) + ", not an object");
  const auto found = object.find(name);
  if (found == object.end()) Malformed(kind, std::string("no '") + name + "'");
  return *found;
}

// Field `name` of `object`: a string, a bool, or a number in [min, max]; anything else is
// named as malformed.
std::string Text(const json& object, const char* name, const char* kind) {
  const json& value = Member(object, name, kind);
  if (!value.is_string()) Malformed(kind, "'" + std::string(name) + "' is " + Shown(value) + ", not a string");
  return value.get<std::string>();
}

bool Flag(const json& object, const char* name, const char* kind) {
  const json& value = Member(object, name, kind);
  if (!value.is_boolean()) Malformed(kind, "'" + std::string(name) + "' is " + Shown(value) + ", not true or false");
  return value.get<bool>();
}

int Integer(const json& object, const char* name, const char* kind, int min, int max) {
  const json& value = Member(object, name, kind);
  const bool fits = (value.is_number_integer() && value.get<int64_t>() >= min && value.get<int64_t>() <= max) ||
                    (value.is_number_unsigned() && value.get<uint64_t>() <= static_cast<uint64_t>(max) && min <= 0);
  if (!fits)
    Malformed(kind, "'" + std::string(name) + "' is " + Shown(value) + ", not an integer in " + std::to_string(min) +
                        ".." + std::to_string(max));
  return static_cast<int>(value.get<int64_t>());
}

double Seconds(const json& object, const char* name, const char* kind) {
  const json& value = Member(object, name, kind);
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
    Malformed(kind, "'" + std::string(name) + "' is " + Shown(value) + ", not a number of seconds of 0 or more");
  return value.get<double>();
}

constexpr int kMaxInt = std::numeric_limits<int>::max();

[[noreturn]] void ExpectedHello(const std::string& got) {
  EST_THROW(est::ConfigError, "expected the hello of est-launch --node-rank (protocol version ", kProtocolVersion,
            "), got ", got);
}

NodeOffer ReadOffer(const json& hello) {
  const json& body = Member(hello, "offer", kHello);
  NodeOffer offer;
  offer.node_rank = Integer(body, "node_rank", kHello, 0, kMaxInt);
  offer.layout.host = Text(body, "host", kHello);
  offer.first_port = Integer(body, "first_port", kHello, 1, 65535);
  offer.layout.chief = Flag(body, "chief", kHello);
  offer.layout.workers = Integer(body, "workers", kHello, 0, kMaxHostTasks);
  offer.layout.ps = Integer(body, "ps", kHello, 0, kMaxHostTasks);
  offer.layout.evaluator = Flag(body, "evaluator", kHello);
  if (offer.layout.host.empty()) Malformed(kHello, "the offer's 'host' is empty");
  if (offer.layout.num_tasks() < 1 || offer.layout.num_tasks() > kMaxHostTasks)
    Malformed(kHello, "the offer has " + std::to_string(offer.layout.num_tasks()) + " tasks, not 1.." +
                          std::to_string(kMaxHostTasks));
  try {
    ValidatePortRange(offer.first_port, offer.layout.num_tasks());
  } catch (const est::ConfigError& e) {
    Malformed(kHello, std::string("the offer's ports: ") + e.what());
  }
  return offer;
}

HelloMessage ReadHello(const json& body) {
  const auto version = body.is_object() ? body.find("version") : body.end();
  if (!body.is_object() || version == body.end() || *version != kProtocolVersion)
    ExpectedHello(version == body.end() ? Shown(body) : "version " + Shown(*version));
  HelloMessage hello;
  hello.min_nodes = Integer(body, "min_nodes", kHello, 0, kMaxInt);
  hello.max_nodes = Integer(body, "max_nodes", kHello, 0, kMaxInt);
  hello.token = Text(body, "token", kHello);
  hello.offer = ReadOffer(body);
  return hello;
}

TaskId ReadTask(const json& task, const char* kind) {
  if (!task.is_array() || task.size() != 2 || !task[0].is_string())
    Malformed(kind, "a task is " + Shown(task) + ", not [\"worker\", 1]");
  const std::optional<TaskType> type = est::distribute::ParseTaskType(task[0].get<std::string>());
  if (!type || *type == TaskType::kLocal) Malformed(kind, "a task's job is " + Shown(task[0]));
  const json index = {{"index", task[1]}};
  return {*type, Integer(index, "index", kind, 0, est::distribute::kMaxTrainingTasks - 1)};
}

NodeStart ReadStart(const json& body) {
  NodeStart start;
  start.round = Integer(body, "round", kStart, 0, kMaxInt);
  start.job_id = Text(body, "job_id", kStart);
  start.job_token = Text(body, "job_token", kStart);
  try {
    start.cluster = Member(body, "cluster", kStart).get<est::distribute::ClusterSpec>();
  } catch (const json::exception&) {
    Malformed(kStart,
              "'cluster' is " + Shown(body.at("cluster")) + ", not TF_CONFIG's {\"worker\": [\"host:port\", ...]}");
  }
  const json& tasks = Member(body, "tasks", kStart);
  if (!tasks.is_array() || tasks.empty()) Malformed(kStart, "'tasks' is " + Shown(tasks) + ", not a list of tasks");
  for (const json& task : tasks) start.tasks.push_back(ReadTask(task, kStart));
  for (const TaskId& task : start.tasks) {
    try {
      est::distribute::MakeClusterConfig(start.cluster, TaskTypeName(task.type), task.index, "est-launch");
    } catch (const est::ConfigError& e) {
      Malformed(kStart, "its cluster has no place for " + task.label() + ": " + e.what());
    }
  }
  start.max_restarts = Integer(body, "max_restarts", kStart, 0, kMaxInt);
  start.min_workers = Integer(body, "min_workers", kStart, 0, est::distribute::kMaxTrainingTasks);
  start.max_workers = Integer(body, "max_workers", kStart, 0, est::distribute::kMaxTrainingTasks);
  start.restart_backoff_secs = Seconds(body, "restart_backoff_secs", kStart);
  start.max_restart_backoff_secs = Seconds(body, "max_restart_backoff_secs", kStart);
  return start;
}

}  // namespace

NodeMessage ParseNodeMessage(const json& message) {
  if (!message.is_object()) ExpectedHello(Shown(message));
  if (message.contains(kHello)) return ReadHello(message[kHello]);
  if (message.contains(kRefusal)) return RefusalMessage{Text(message, kRefusal, kRefusal),
                                                        Integer(message, "exit_code", kRefusal, 1, 255)};
  if (message.contains(kStart)) return ReadStart(message[kStart]);
  if (message.contains(kStop)) return StopMessage{Text(message, kStop, kStop)};
  if (message.contains(kVerdict)) {
    const json& body = message[kVerdict];
    return VerdictMessage{Flag(body, "restart", kVerdict), Integer(body, "exit_code", kVerdict, 0, 255),
                          Text(body, "error", kVerdict)};
  }
  if (message.contains(kFailed)) return FailedMessage{Text(message, kFailed, kFailed)};
  if (message.contains(kEnded)) {
    const json& body = message[kEnded];
    return EndedMessage{Integer(body, "exit_code", kEnded, 0, 255), Text(body, "error", kEnded),
                        Flag(body, "restartable", kEnded)};
  }
  if (message.contains(kLost)) {
    const json& body = message[kLost];
    const TaskId task = ReadTask(json::array({Member(body, "type", kLost), Member(body, "index", kLost)}), kLost);
    if (task.type != TaskType::kWorker) Malformed(kLost, "only a worker is lost, not the " + task.label());
    return LostMessage{task, Flag(body, "restarting", kLost)};
  }
  if (message.contains(kFlightRecorder)) return FlightRecorderMessage{};
  ExpectedHello(Shown(message));
}

HelloMessage ParseHello(const json& message) {
  if (!message.is_object() || !message.contains(kHello)) ExpectedHello(Shown(message));
  return ReadHello(message[kHello]);
}

const char* KindOf(const NodeMessage& message) {
  static constexpr const char* kKinds[] = {kHello, kRefusal, kStart,  kStop,          kVerdict,
                                           kFailed, kEnded,  kLost,   kFlightRecorder};
  static_assert(std::size(kKinds) == std::variant_size_v<NodeMessage>);
  return kKinds[message.index()];
}

namespace {

template <typename... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
template <typename... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;

json TaskJson(const TaskId& task) { return json::array({TaskTypeName(task.type), task.index}); }

}  // namespace

json ToJson(const NodeMessage& message) {
  return std::visit(
      Overloaded{
          [](const HelloMessage& hello) -> json {
            const NodeOffer& offer = hello.offer;
            return {{kHello,
                     {{"version", kProtocolVersion},
                      {"min_nodes", hello.min_nodes},
                      {"max_nodes", hello.max_nodes},
                      {"token", hello.token},
                      {"offer",
                       {{"node_rank", offer.node_rank},
                        {"host", offer.layout.host},
                        {"first_port", offer.first_port},
                        {"chief", offer.layout.chief},
                        {"workers", offer.layout.workers},
                        {"ps", offer.layout.ps},
                        {"evaluator", offer.layout.evaluator}}}}}};
          },
          [](const RefusalMessage& refusal) -> json {
            return {{kRefusal, refusal.error}, {"exit_code", refusal.exit_code}};
          },
          [](const NodeStart& start) -> json {
            json tasks = json::array();
            for (const TaskId& task : start.tasks) tasks.push_back(TaskJson(task));
            return {{kStart,
                     {{"round", start.round},
                      {"job_id", start.job_id},
                      {"job_token", start.job_token},
                      {"cluster", start.cluster},
                      {"tasks", tasks},
                      {"max_restarts", start.max_restarts},
                      {"min_workers", start.min_workers},
                      {"max_workers", start.max_workers},
                      {"restart_backoff_secs", start.restart_backoff_secs},
                      {"max_restart_backoff_secs", start.max_restart_backoff_secs}}}};
          },
          [](const StopMessage& stop) -> json { return {{kStop, stop.reason}}; },
          [](const VerdictMessage& verdict) -> json {
            return {{kVerdict,
                     {{"restart", verdict.restart}, {"exit_code", verdict.exit_code}, {"error", verdict.error}}}};
          },
          [](const FailedMessage& failed) -> json { return {{kFailed, failed.reason}}; },
          [](const EndedMessage& ended) -> json {
            return {{kEnded,
                     {{"exit_code", ended.exit_code}, {"error", ended.error}, {"restartable", ended.restartable}}}};
          },
          [](const LostMessage& lost) -> json {
            return {{kLost,
                     {{"type", TaskTypeName(lost.task.type)},
                      {"index", lost.task.index},
                      {"restarting", lost.restarting}}}};
          },
          [](const FlightRecorderMessage&) -> json { return {{kFlightRecorder, true}}; },
      },
      message);
}

bool SendMessage(NodeChannel& channel, const NodeMessage& message) { return channel.Send(ToJson(message)); }

std::vector<NodeMessage> ReceiveMessages(NodeChannel& channel) {
  std::vector<NodeMessage> messages;
  for (const json& line : channel.Receive()) {
    try {
      messages.push_back(ParseNodeMessage(line));
    } catch (const est::ConfigError& e) {
      channel.Close(std::string("it sent ") + e.what());
      break;
    }
  }
  return messages;
}

}  // namespace est_launch
