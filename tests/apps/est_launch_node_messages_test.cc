// The messages of est-launch across hosts: each kind survives its sending, and a malformed
// one, as a foreign or broken node may send it, is a ConfigError naming the kind and field.

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/est_launch/node_channel.h"
#include "apps/est_launch/node_messages.h"
#include "common/error.h"

namespace est_launch_node_messages_test {
namespace {

using namespace est_launch;  // NOLINT: the messages under test
using nlohmann::json;

NodeStart Start() {
  NodeStart start;
  start.round = 2;
  start.job_id = "job-1";
  start.job_token = "secret";
  start.cluster = {{"chief", {"10.0.0.1:7000"}}, {"worker", {"10.0.0.1:7001", "10.0.0.2:7000"}}};
  start.tasks = {{TaskType::kWorker, 1}};
  start.max_restarts = 3;
  start.min_workers = 2;
  start.max_workers = 5;
  start.restart_backoff_secs = 0.5;
  start.max_restart_backoff_secs = 4;
  return start;
}

HelloMessage Hello() {
  HelloMessage hello;
  hello.min_nodes = 2;
  hello.max_nodes = 4;
  hello.token = "t";
  hello.offer.node_rank = 3;
  hello.offer.layout.host = "::1";
  hello.offer.layout.workers = 2;
  hello.offer.layout.ps = 1;
  hello.offer.layout.evaluator = true;
  hello.offer.first_port = 7000;
  return hello;
}

// `message` with `field` of its body (the object under its kind) set to `value`.
json With(json message, const std::string& kind, const std::string& field, json value) {
  message[kind][field] = std::move(value);
  return message;
}

std::string ErrorOf(const json& message) {
  try {
    ParseNodeMessage(message);
  } catch (const est::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Every message of est-launch across hosts survives its sending", "[launch]") {
  const std::vector<NodeMessage> messages{Hello(),
                                          RefusalMessage{"two chiefs", 2},
                                          Start(),
                                          StopMessage{"node 1: worker 2 failed"},
                                          VerdictMessage{true, 1, "worker 2 failed"},
                                          FailedMessage{"worker 2 exited with status 1"},
                                          EndedMessage{1, "worker 2 failed", true},
                                          LostMessage{{TaskType::kWorker, 3}, true},
                                          FlightRecorderMessage{}};
  for (const NodeMessage& message : messages) {
    INFO(ToJson(message).dump());
    const NodeMessage read = ParseNodeMessage(ToJson(message));
    CHECK(read.index() == message.index());
    CHECK(ToJson(read) == ToJson(message));
  }
  const NodeStart read = std::get<NodeStart>(ParseNodeMessage(ToJson(Start())));
  CHECK(read.tasks == std::vector<TaskId>{{TaskType::kWorker, 1}});
  CHECK(read.cluster.at("worker") == std::vector<std::string>{"10.0.0.1:7001", "10.0.0.2:7000"});
  CHECK(read.max_workers == 5);
  CHECK(std::string(KindOf(read)) == "start");
  CHECK(std::get<LostMessage>(ParseNodeMessage(ToJson(LostMessage{{TaskType::kWorker, 3}, false}))).task.index == 3);
}

TEST_CASE("A malformed message names its kind and the field at fault", "[launch]") {
  const json start = ToJson(Start());
  CHECK(ErrorOf(With(start, "start", "tasks", json::parse(R"([["worker", "one"]])"))) ==
        "a malformed 'start' message: 'index' is \"one\", not an integer in 0..65535");
  CHECK(ErrorOf(With(start, "start", "tasks", json::parse(R"([["boss", 0]])"))) ==
        "a malformed 'start' message: a task's job is \"boss\"");
  CHECK(ErrorOf(With(start, "start", "round", -1)) ==
        "a malformed 'start' message: 'round' is -1, not an integer in 0..2147483647");
  CHECK(ErrorOf(With(start, "start", "max_restarts", 1e20)) ==
        "a malformed 'start' message: 'max_restarts' is 1e+20, not an integer in 0..2147483647");
  CHECK(ErrorOf(With(start, "start", "restart_backoff_secs", "soon")) ==
        "a malformed 'start' message: 'restart_backoff_secs' is \"soon\", not a number of seconds of 0 or more");
  CHECK(ErrorOf(With(start, "start", "cluster", json::parse(R"({"worker": "a:1"})"))) ==
        "a malformed 'start' message: 'cluster' is {\"worker\":\"a:1\"}, not TF_CONFIG's {\"worker\": "
        "[\"host:port\", ...]}");
  CHECK_THAT(ErrorOf(With(start, "start", "cluster", json::parse(R"({"worker": ["a:1"]})"))),
             Catch::StartsWith("a malformed 'start' message: its cluster has no place for worker 1: "));
  json no_tasks = start;
  no_tasks["start"].erase("tasks");
  CHECK(ErrorOf(no_tasks) == "a malformed 'start' message: no 'tasks'");

  const json ended = ToJson(EndedMessage{0, "", false});
  CHECK(ErrorOf(With(ended, "ended", "exit_code", "x")) ==
        "a malformed 'ended' message: 'exit_code' is \"x\", not an integer in 0..255");
  CHECK(ErrorOf(With(ended, "ended", "restartable", 1)) ==
        "a malformed 'ended' message: 'restartable' is 1, not true or false");
  CHECK(ErrorOf(json{{"ended", "done"}}) == "a malformed 'ended' message: it is \"done\", not an object");
  CHECK(ErrorOf(With(ToJson(LostMessage{{TaskType::kWorker, 1}, false}), "lost", "type", "chief")) ==
        "a malformed 'lost' message: only a worker is lost, not the chief 1");
  CHECK(ErrorOf(json{{"stop", 7}}) == "a malformed 'stop' message: 'stop' is 7, not a string");
  CHECK(ErrorOf(json{{"error", "refused"}, {"exit_code", 0}}) ==
        "a malformed 'error' message: 'exit_code' is 0, not an integer in 1..255");

  // A first message that is no hello of this version.
  const std::string expected = "expected the hello of est-launch --node-rank (protocol version 4), got ";
  CHECK(ErrorOf(json{{"shutdown", true}}) == expected + "{\"shutdown\":true}");
  CHECK(ErrorOf(json::array()) == expected + "[]");
  CHECK(ErrorOf(With(ToJson(Hello()), "hello", "version", 3)) == expected + "version 3");
  CHECK_THROWS_WITH(ParseHello(ToJson(StopMessage{"x"})), expected + "{\"stop\":\"x\"}");
  json hello = ToJson(Hello());
  hello["hello"]["offer"]["first_port"] = 65535;
  CHECK(ErrorOf(hello) ==
        "a malformed 'hello' message: the offer's ports: --port 65535 gives ports 65535-65538 for 4 task(s); every "
        "port must lie in 1..65535");
  hello["hello"]["offer"]["first_port"] = 7000;
  hello["hello"]["offer"]["workers"] = "two";
  CHECK(ErrorOf(hello) == "a malformed 'hello' message: 'workers' is \"two\", not an integer in 0..65535");
  CHECK(ParseHello(ToJson(Hello())).offer.layout.num_tasks() == 4);
}

TEST_CASE("A malformed message closes its connection, saying why, after the messages before it", "[launch]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  NodeChannel channel(fds[0], "node 1");
  const std::string lines = ToJson(FailedMessage{"worker 0 failed"}).dump() + "\n" +
                            R"({"ended": {"exit_code": "x", "error": "", "restartable": false}})" + "\n" +
                            ToJson(FlightRecorderMessage{}).dump() + "\n";
  REQUIRE(::write(fds[1], lines.data(), lines.size()) == static_cast<ssize_t>(lines.size()));
  const std::vector<NodeMessage> messages = ReceiveMessages(channel);
  REQUIRE(messages.size() == 1);
  CHECK(std::get<FailedMessage>(messages[0]).reason == "worker 0 failed");
  CHECK(channel.closed());
  CHECK(channel.close_reason() ==
        "it sent a malformed 'ended' message: 'exit_code' is \"x\", not an integer in 0..255");
  ::close(fds[1]);
}

}  // namespace est_launch_node_messages_test
