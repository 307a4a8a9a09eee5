// est-launch as a user runs it: TF_CONFIG and EST_JOB_ID per task, prefixed output,
// stopping every task when one fails or on SIGINT, SIGKILL after the grace period, errors.

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "apps/est_launch/supervisor.h"
#include "tests/apps/est_launch_runner.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using est::testing::ByTask;
using est::testing::Contains;
using est::testing::Finish;
using est::testing::Launch;
using est::testing::LaunchRun;
using est::testing::Lines;
using est::testing::ReadFile;
using est::testing::RunLaunch;
using est::testing::ScopedEnv;
using est::testing::Start;
using nlohmann::json;

// The pids written by the tasks as files "<dir>/pid.*", waiting up to 5 s for `count`.
std::vector<pid_t> WaitForPidFiles(const fs::path& dir, size_t count) {
  std::vector<pid_t> pids;
  for (auto deadline = Clock::now() + std::chrono::seconds(5); Clock::now() < deadline;) {
    pids.clear();
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("pid.", 0) != 0) continue;
      const std::string text = ReadFile(entry.path());
      if (!text.empty() && text.back() == '\n') pids.push_back(std::stoi(text));
    }
    if (pids.size() >= count) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pids;
}

bool ProcessExists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// A task script: records the pids of its shell and of a background `sleep 60` (a
// grandchild of est-launch) as files "$1/pid.*" and waits. With `failing_after_pid_files`,
// worker 1 instead waits until that many pid files exist (at most 5 s) and exits 3.
std::string SleeperScript(int failing_after_pid_files, bool ignore_term = false) {
  std::string script;
  if (failing_after_pid_files > 0)
    script += R"(case "$TF_CONFIG" in *'"index":1,"type":"worker"'*) n=0; )"
              R"sh(while [ "$(ls "$1" | grep -c '^pid\.')" -lt )sh" + std::to_string(failing_after_pid_files) +
              R"( ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done; echo failing; exit 3;; esac; )";
  if (ignore_term) script += "trap '' TERM; ";
  // Written under another name and renamed, so that a pid file is complete when it appears.
  return script + R"(sleep 60 & echo $! > "$1/tmp.$!"; mv "$1/tmp.$!" "$1/pid.$!"; )"
                  R"(echo $$ > "$1/tmp.$$"; mv "$1/tmp.$$" "$1/pid.$$"; wait)";
}

// The CPUs this process may run on, ascending: est-launch started from here gets the same.
std::vector<int> OwnCpus() {
  cpu_set_t set;
  REQUIRE(::sched_getaffinity(0, sizeof(set), &set) == 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

// CPUs in the kernel's list format ("0-2,5") as an ascending list.
std::vector<int> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  std::istringstream in(text);
  for (std::string range; std::getline(in, range, ',');) {
    const size_t dash = range.find('-');
    const int first = std::stoi(range.substr(0, dash));
    const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

// What a task of kCpuReportScript printed: the CPUs it may run on and its OMP_NUM_THREADS.
struct CpuReport {
  std::vector<int> cpus;
  std::string omp;
};
const char* const kCpuReportScript = "grep Cpus_allowed_list /proc/self/status; echo OMP=$OMP_NUM_THREADS";

std::map<std::string, CpuReport> CpuReports(const std::string& output) {
  std::map<std::string, CpuReport> reports;
  for (const auto& [label, lines] : ByTask(output)) {
    REQUIRE(lines.size() == 2);
    const std::string prefix = "Cpus_allowed_list:";
    REQUIRE(lines[0].rfind(prefix, 0) == 0);
    REQUIRE(lines[1].rfind("OMP=", 0) == 0);
    reports[label] = {ParseCpuList(lines[0].substr(lines[0].find_first_not_of(" \t", prefix.size()))),
                      lines[1].substr(4)};
  }
  return reports;
}

}  // namespace

TEST_CASE("est-launch gives every task its TF_CONFIG and the launch's EST_JOB_ID", "[launch]") {
  ::setenv("TF_CONFIG", "stale", 1);
  ::setenv("EST_LAUNCH_TEST_INHERITED", "kept", 1);
  const std::string script = R"(echo "$TF_CONFIG"; echo "job=$EST_JOB_ID inherited=$EST_LAUNCH_TEST_INHERITED")";

  SECTION("chief, two workers and an evaluator on a free port range") {
    LaunchRun run = RunLaunch({"--workers", "2", "--chief", "--evaluator", "--", "sh", "-c", script}, "launch_tf_config");
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    const auto by_task = ByTask(run.out);
    REQUIRE(by_task.size() == 4);
    json cluster;
    std::set<std::string> job_lines;
    for (const auto& [label, lines] : by_task) {
      REQUIRE(lines.size() == 2);
      const json config = json::parse(lines[0]);
      CHECK(config["task"]["type"].get<std::string>() + " " + std::to_string(config["task"]["index"].get<int>()) ==
            label);
      if (cluster.is_null()) cluster = config["cluster"];
      CHECK(config["cluster"] == cluster);
      job_lines.insert(lines[1]);
    }
    REQUIRE(cluster["chief"].size() == 1);
    const std::string chief = cluster["chief"][0];
    REQUIRE(chief.rfind("127.0.0.1:", 0) == 0);
    const int port = std::stoi(chief.substr(10));
    CHECK(cluster == json{{"chief", {chief}},
                          {"worker", {"127.0.0.1:" + std::to_string(port + 1), "127.0.0.1:" + std::to_string(port + 2)}},
                          {"evaluator", {"127.0.0.1:" + std::to_string(port + 3)}}});
    REQUIRE(job_lines.size() == 1);  // one EST_JOB_ID for the whole launch
    const std::string job_line = *job_lines.begin();
    CHECK(std::regex_match(job_line, std::regex("job=[0-9a-f]{16} inherited=kept")));

    LaunchRun again = RunLaunch({"--workers", "1", "--", "sh", "-c", script}, "launch_tf_config2");
    REQUIRE(again.exit_code == 0);
    const auto again_lines = ByTask(again.out)["worker 0"];
    REQUIRE(again_lines.size() == 2);
    CHECK(again_lines[1] != job_line);  // another launch, another id
  }
  SECTION("workers only, from --port; a chief alone") {
    LaunchRun run = RunLaunch({"--workers", "3", "--port", "23456", "sh", "-c", script}, "launch_tf_config3");
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    const auto by_task = ByTask(run.out);
    REQUIRE(by_task.size() == 3);
    for (int i = 0; i < 3; ++i) {
      const json config = json::parse(by_task.at("worker " + std::to_string(i)).at(0));
      CHECK(config == json{{"cluster", {{"worker", {"127.0.0.1:23456", "127.0.0.1:23457", "127.0.0.1:23458"}}}},
                           {"task", {{"type", "worker"}, {"index", i}}}});
    }
    LaunchRun chief_only = RunLaunch({"--workers", "0", "--chief", "--port", "23456", "sh", "-c", script}, "launch_chief");
    REQUIRE(chief_only.exit_code == 0);
    CHECK(json::parse(ByTask(chief_only.out).at("chief 0").at(0)) ==
          json{{"cluster", {{"chief", {"127.0.0.1:23456"}}}}, {"task", {{"type", "chief"}, {"index", 0}}}});
  }
  ::unsetenv("TF_CONFIG");
  ::unsetenv("EST_LAUNCH_TEST_INHERITED");
}

TEST_CASE("est-launch gives every task one secret EST_JOB_TOKEN, and its --tls-* files as EST_TLS_*", "[launch]") {
  const std::string script = R"(echo "token=$EST_JOB_TOKEN tls=$EST_TLS_CA_FILE,$EST_TLS_CERT_FILE,$EST_TLS_KEY_FILE,$EST_TLS_REQUIRE_CLIENT_CERT")";
  SECTION("a random token per launch, never printed by est-launch; no TLS variables without the flags") {
    ::unsetenv("EST_JOB_TOKEN");
    LaunchRun run = RunLaunch({"--workers", "2", "--chief", "--", "sh", "-c", script}, "launch_token");
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    std::set<std::string> lines;
    for (const auto& [label, task_lines] : ByTask(run.out)) lines.insert(task_lines.at(0));
    REQUIRE(lines.size() == 1);
    std::smatch token;
    REQUIRE(std::regex_match(*lines.begin(), token, std::regex("token=([0-9a-f]{32}) tls=,,,")));
    CHECK(run.err.find(token[1].str()) == std::string::npos);
    LaunchRun again = RunLaunch({"--workers", "1", "--", "sh", "-c", script}, "launch_token2");
    REQUIRE(again.exit_code == 0);
    CHECK(ByTask(again.out)["worker 0"].at(0).find(token[1].str()) == std::string::npos);
  }
  SECTION("est-launch's own EST_JOB_TOKEN, and the TLS flags") {
    const auto dir = est::testing::FreshTempDir("launch_tls_files");
    std::filesystem::create_directories(dir);
    for (const char* name : {"ca.pem", "cert.pem", "key.pem"}) std::ofstream(dir / name) << "pem";
    ::setenv("EST_JOB_TOKEN", "chosen-secret", 1);
    LaunchRun run = RunLaunch({"--workers", "1", "--tls-ca-file", (dir / "ca.pem").string(), "--tls-cert-file",
                               (dir / "cert.pem").string(), "--tls-key-file", (dir / "key.pem").string(),
                               "--tls-require-client-cert", "--", "sh", "-c", script},
                              "launch_tls");
    ::unsetenv("EST_JOB_TOKEN");
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(ByTask(run.out)["worker 0"].at(0) == "token=chosen-secret tls=" + (dir / "ca.pem").string() + "," +
                                                   (dir / "cert.pem").string() + "," + (dir / "key.pem").string() +
                                                   ",1");
    LaunchRun missing = RunLaunch({"--workers", "1", "--tls-ca-file", (dir / "absent.pem").string(), "true"},
                                  "launch_tls_missing");
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.err, Catch::Contains("--tls-ca-file") && Catch::Contains("absent.pem"));
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("est-launch prefixes every line and never interleaves lines", "[launch]") {
  // Each line is written in two pieces (so the pipe sees partial lines); stderr gets lines too.
  const std::string script = R"(pad=$(printf '%0400d' 0); i=0; while [ $i -lt 200 ]; do )"
                             R"(printf 'pid=%s n=%s ' $$ $i; printf '%s\n' "$pad"; )"
                             R"(echo "err pid=$$ n=$i" >&2; i=$((i + 1)); done; printf 'no newline at the end')";
  LaunchRun run = RunLaunch({"--workers", "2", "--", "sh", "-c", script}, "launch_prefix");
  REQUIRE(run.exit_code == 0);
  const std::string pad(400, '0');
  for (const auto& [stream, text, body] : {std::make_tuple("stdout", run.out, std::string(" ") + pad),
                                           std::make_tuple("stderr", run.err, std::string())}) {
    INFO(stream);
    const auto by_task = ByTask(text);
    REQUIRE(by_task.size() == 2);
    std::set<std::string> pids;
    for (const auto& [label, lines] : by_task) {
      INFO(label);
      const std::string expected_last = std::string(stream) == "stdout" ? "no newline at the end" : "";
      REQUIRE(lines.size() == (expected_last.empty() ? 200u : 201u));
      const std::regex line_format(std::string(std::string(stream) == "stderr" ? "err " : "") + "pid=(\\d+) n=(\\d+)" + body);
      for (int n = 0; n < 200; ++n) {
        std::smatch match;
        REQUIRE(std::regex_match(lines[n], match, line_format));
        CHECK(std::stoi(match[2]) == n);
        pids.insert(match[1]);
      }
      if (!expected_last.empty()) CHECK(lines[200] == expected_last);
    }
    CHECK(pids.size() == 2);  // one process per task, each line from its own task
    // Nothing else: every line is a task's (or, on stderr, est-launch's own).
    for (const std::string& line : Lines(text))
      CHECK((line.rfind("[worker ", 0) == 0 || line.rfind("est-launch: ", 0) == 0));
  }
}

TEST_CASE("est-launch stops every task when one fails or when interrupted", "[launch]") {
  SECTION("a task exits 3: the others are stopped with SIGTERM at once") {
    const fs::path dir = est::testing::FreshTempDir("launch_failure");
    const Launch launch = Start({"--workers", "3", "--", "sh", "-c", SleeperScript(4), "sh", dir.string()}, dir);
    const std::vector<pid_t> pids = WaitForPidFiles(dir, 4);
    LaunchRun run = Finish(launch);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 1);
    CHECK(run.seconds < 5);
    CHECK(Contains(run.out, "[worker 1] failing\n"));
    CHECK(Contains(run.err, "est-launch: worker 1 exited with status 3; stopping the other tasks"));
    CHECK(Lines(run.err).back() == "est-launch: error: worker 1 exited with status 3; stopped the other tasks");
    CHECK(pids.size() == 4);  // two shells and their background sleeps
    for (pid_t pid : pids) CHECK_FALSE(ProcessExists(pid));
  }
  SECTION("a task that ignores SIGTERM is killed after --grace-secs") {
    const fs::path dir = est::testing::FreshTempDir("launch_grace");
    const Launch launch = Start(
        {"--workers", "2", "--grace-secs", "1", "--", "sh", "-c", SleeperScript(2, true), "sh", dir.string()}, dir);
    const std::vector<pid_t> pids = WaitForPidFiles(dir, 2);
    LaunchRun run = Finish(launch);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 1);
    CHECK(run.seconds >= 1);
    CHECK(run.seconds < 5);
    CHECK(Contains(run.err, "est-launch: worker 0 did not stop within 1 s; sending SIGKILL"));
    CHECK(Contains(run.err, "est-launch: worker 0 was killed by SIGKILL"));
    CHECK(Lines(run.err).back() == "est-launch: error: worker 1 exited with status 3; stopped the other tasks");
    CHECK(pids.size() == 2);
    for (pid_t pid : pids) CHECK_FALSE(ProcessExists(pid));
  }
  SECTION("a reader that never reads est-launch's output delays neither the stop nor the exit for long") {
    const fs::path dir = est::testing::FreshTempDir("launch_stalled_reader");
    const fs::path fifo = dir / "stdout.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // opened, never read
    REQUIRE(reader >= 0);
    const std::string script = R"(case "$TF_CONFIG" in *'"index":1,"type":"worker"'*) sleep 1; exit 3;; esac; )"
                               R"(echo $$ > "$1/pid.$$"; exec yes 'a line of output')";
    const Launch launch = Start({"--workers", "2", "--grace-secs", "1", "--", "sh", "-c", script, "sh", dir.string()},
                                dir, fifo);
    const std::vector<pid_t> pids = WaitForPidFiles(dir, 1);
    LaunchRun run = Finish(launch);
    ::close(reader);
    INFO(run.err);
    CHECK(run.exit_code == 1);
    CHECK(run.seconds < 10);  // 1 s until the failure, then at most 5 s for the output
    CHECK(Contains(run.err, "est-launch: worker 0 was killed by SIGTERM"));  // at once, not after the grace period
    CHECK(Lines(run.err).back() == "est-launch: error: worker 1 exited with status 3; stopped the other tasks");
    REQUIRE(pids.size() == 1);
    CHECK_FALSE(ProcessExists(pids[0]));
  }
  SECTION("SIGINT to est-launch is forwarded to every task") {
    const fs::path dir = est::testing::FreshTempDir("launch_sigint");
    // In the foreground: a non-interactive shell starts background jobs with SIGINT ignored.
    const std::string script = R"(echo $$ > "$1/pid.$$"; exec sleep 60)";
    const Launch launch = Start({"--workers", "1", "--chief", "--", "sh", "-c", script, "sh", dir.string()}, dir);
    const std::vector<pid_t> pids = WaitForPidFiles(dir, 2);
    REQUIRE(pids.size() == 2);
    ::kill(launch.pid, SIGINT);
    LaunchRun run = Finish(launch);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 130);
    CHECK(run.seconds < 5);
    CHECK(Contains(run.err, "est-launch: chief 0 was killed by SIGINT"));
    CHECK(Contains(run.err, "est-launch: caught SIGINT; forwarding it to the tasks"));
    CHECK(Lines(run.err).back() == "est-launch: error: interrupted by SIGINT; stopped the tasks");
    for (pid_t pid : pids) CHECK_FALSE(ProcessExists(pid));
  }
  SECTION("with ps tasks, a forwarded SIGTERM reaches the ps tasks after every other task has exited") {
    // The chief's last pull, push and checkpoint need the ps tasks: they stop last.
    const fs::path dir = est::testing::FreshTempDir("launch_ps_last");
    const std::string script =
        R"(case "$TF_CONFIG" in *'"type":"ps"'*) trap 'echo ps >> "$1/order"; exit 143' TERM;; )"
        R"(*) trap 'sleep 0.3; echo training >> "$1/order"; exit 143' TERM;; esac; )"
        R"(echo $$ > "$1/tmp.$$"; mv "$1/tmp.$$" "$1/pid.$$"; while true; do sleep 0.05; done)";
    const Launch launch =
        Start({"--workers", "2", "--ps", "1", "--", "sh", "-c", script, "sh", dir.string()}, dir);
    REQUIRE(WaitForPidFiles(dir, 3).size() == 3);
    ::kill(launch.pid, SIGTERM);
    LaunchRun run = Finish(launch);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 143);
    CHECK(ReadFile(dir / "order") == "training\ntraining\nps\n");
    CHECK(Lines(run.err).back() == "est-launch: error: interrupted by SIGTERM; stopped the tasks");
  }
  SECTION("a task that fails while it stops makes the stop an error that names it") {
    const fs::path dir = est::testing::FreshTempDir("launch_failed_stop");
    const std::string script =
        R"(case "$TF_CONFIG" in *'"index":1,"type":"worker"'*) trap 'exit 1' TERM;; *) trap 'exit 143' TERM;; esac; )"
        R"(echo $$ > "$1/tmp.$$"; mv "$1/tmp.$$" "$1/pid.$$"; while true; do sleep 0.05; done)";
    const Launch launch = Start({"--workers", "2", "--", "sh", "-c", script, "sh", dir.string()}, dir);
    REQUIRE(WaitForPidFiles(dir, 2).size() == 2);
    ::kill(launch.pid, SIGTERM);
    LaunchRun run = Finish(launch);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 1);
    CHECK(Lines(run.err).back() ==
          "est-launch: error: interrupted by SIGTERM, but worker 1 exited with status 1 while stopping on SIGTERM: the "
          "job may not have saved its last checkpoint");
  }
}

TEST_CASE("est-launch forwards SIGUSR1 to the tasks that catch it, for their flight recorders", "[launch]") {
  const fs::path dir = est::testing::FreshTempDir("launch_sigusr1");
  // Worker 0 catches SIGUSR1 (as a TorchEstimator program does while it trains); worker 1
  // does not, and would die of it.
  const std::string script = R"(case "$TF_CONFIG" in *'"index":0,"type":"worker"'*) )"
                             R"(trap 'echo caught >> "$1/usr1"' USR1;; esac; )"
                             R"(echo $$ > "$1/tmp.$$"; mv "$1/tmp.$$" "$1/pid.$$"; )"
                             R"(while [ ! -e "$1/done" ]; do sleep 0.05; done)";
  const Launch launch = Start({"--workers", "2", "--", "sh", "-c", script, "sh", dir.string()}, dir);
  REQUIRE(WaitForPidFiles(dir, 2).size() == 2);
  ::kill(launch.pid, SIGUSR1);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!fs::exists(dir / "usr1") && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(dir / "done").put('\n');
  LaunchRun run = Finish(launch);
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);  // nobody stopped, nobody died
  CHECK(ReadFile(dir / "usr1") == "caught\n");
  CHECK(Contains(run.err,
                 "est-launch: caught SIGUSR1; forwarded it to worker 0 (each logs its flight recorders); "
                 "not to worker 1, where it is not caught (it would end the task)\n"));
}

TEST_CASE("RestartBackoffSecs doubles from the first wait up to the longest", "[launch]") {
  est_launch::LaunchOptions options;
  CHECK(est_launch::RestartBackoffSecs(options, 1) == 1);
  CHECK(est_launch::RestartBackoffSecs(options, 2) == 2);
  CHECK(est_launch::RestartBackoffSecs(options, 6) == 32);
  CHECK(est_launch::RestartBackoffSecs(options, 7) == 60);
  CHECK(est_launch::RestartBackoffSecs(options, 1000) == 60);
  options.restart_backoff_secs = 0.25;
  options.max_restart_backoff_secs = 0.75;
  CHECK(est_launch::RestartBackoffSecs(options, 2) == 0.5);
  CHECK(est_launch::RestartBackoffSecs(options, 3) == 0.75);
  options.restart_backoff_secs = 0;
  CHECK(est_launch::RestartBackoffSecs(options, 5) == 0);
}

TEST_CASE("est-launch --min-workers lets the others run on after a worker fails, not after the chief", "[launch]") {
  // Task `failing` exits with 3 once every task has printed EST_MIN_WORKERS; the others then
  // wait a second and print again, unless they were stopped.
  const auto run_failing = [](std::vector<std::string> flags, const std::string& failing, const std::string& name) {
    const std::string m = est::testing::FreshTempDir(name + "_marks").string() + "/";
    const std::string script = R"sh(echo "min=$EST_MIN_WORKERS"; touch )sh" + m +
                               R"sh($EST_TASK; if [ "$EST_TASK" = )sh" + failing + R"sh( ]; then while [ "$(ls )sh" +
                               m +
                               R"sh( | wc -l)" -lt 3 ]; do sleep 0.01; done; exit 3; fi; )sh"
                               R"sh(sleep 1; echo "still running")sh";
    flags.insert(flags.end(), {"--", "sh", "-c", script});
    return RunLaunch(flags, name);
  };
  SECTION("a worker fails while enough are left: exit 0, the others finish") {
    LaunchRun run = run_failing({"--chief", "--workers", "2", "--min-workers", "2"}, "worker-1", "launch_min_workers");
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    CHECK(Contains(run.err,
                   "est-launch: worker 1 exited with status 3; the 2 other training tasks train on without it "
                   "(--min-workers 2)"));
    const auto by_task = ByTask(run.out);
    CHECK(by_task.at("chief 0") == std::vector<std::string>{"min=2", "still running"});
    CHECK(by_task.at("worker 0") == std::vector<std::string>{"min=2", "still running"});
  }
  SECTION("with --max-restarts, the failed worker alone starts again while the others run on") {
    const std::string m = est::testing::FreshTempDir("launch_min_restart_marks").string() + "/";
    // Worker 1's first run fails once every task has started; its second prints and ends.
    const std::string script =
        R"sh(echo "min=$EST_MIN_WORKERS restart=$EST_RESTART_COUNT"; touch )sh" + m +
        R"sh($EST_TASK; if [ "$EST_TASK$EST_RESTART_COUNT" = worker-10 ]; then while [ "$(ls )sh" + m +
        R"sh( | wc -l)" -lt 3 ]; do sleep 0.01; done; exit 3; fi; sleep 1; echo "still running")sh";
    LaunchRun run = RunLaunch({"--chief", "--workers", "2", "--min-workers", "2", "--max-restarts", "1",
                               "--restart-backoff-secs", "0", "--", "sh", "-c", script},
                              "launch_min_restart");
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    CHECK(Contains(run.err,
                   "est-launch: worker 1 exited with status 3; restarting it alone in 0 s (restart 1 of at most 1; "
                   "the 2 other training tasks train on without it until it joins them (--min-workers 2))"));
    const auto by_task = ByTask(run.out);
    CHECK(by_task.at("chief 0") == std::vector<std::string>{"min=2 restart=0", "still running"});
    CHECK(by_task.at("worker 1") == std::vector<std::string>{"min=2 restart=0", "min=2 restart=1", "still running"});
  }
  SECTION("too few would be left: every task stops") {
    LaunchRun run = run_failing({"--chief", "--workers", "2", "--min-workers", "3"}, "worker-1", "launch_min_few");
    INFO(run.out << run.err);
    CHECK(run.exit_code == 1);
    CHECK(Lines(run.err).back() == "est-launch: error: worker 1 exited with status 3; stopped the other tasks");
  }
  SECTION("the chief (worker 0 without a chief job) fails: every task stops") {
    LaunchRun run = run_failing({"--workers", "3", "--min-workers", "1"}, "worker-0", "launch_min_chief");
    INFO(run.out << run.err);
    CHECK(run.exit_code == 1);
    CHECK(Lines(run.err).back() == "est-launch: error: worker 0 exited with status 3; stopped the other tasks");
    CHECK_FALSE(Contains(run.out, "still running"));
  }
}

TEST_CASE("est-launch --max-restarts starts every task again after a failure", "[launch]") {
  // Worker 1 fails on its first two starts; every task prints who it is and which start this is,
  // then leaves a mark, and worker 1 fails only once worker 0 has printed (est-launch stops
  // worker 0 when worker 1 fails: before its echo, its line would be missing).
  const fs::path marks = est::testing::FreshTempDir("launch_restarts_marks");
  const std::string m = marks.string() + "/";
  const std::string script =
      R"(echo "task=$EST_TASK restart=$EST_RESTART_COUNT"; touch )" + m + R"($EST_TASK-$EST_RESTART_COUNT; )"
      R"(if [ "$EST_TASK" = worker-1 ] && [ "$EST_RESTART_COUNT" -lt 2 ]; then )"
      R"(while [ ! -e )" + m + R"(worker-0-$EST_RESTART_COUNT ]; do sleep 0.01; done; exit 3; fi; sleep 0.2)";
  SECTION("enough restarts: the third start succeeds") {
    LaunchRun run = RunLaunch(
        {"--workers", "2", "--max-restarts", "3", "--restart-backoff-secs", "0.3", "--", "sh", "-c", script},
        "launch_restarts");
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.seconds >= 0.9);  // waited 0.3 s, then 0.6 s
    const auto by_task = ByTask(run.out);
    CHECK(by_task.at("worker 0") ==
          std::vector<std::string>{"task=worker-0 restart=0", "task=worker-0 restart=1", "task=worker-0 restart=2"});
    CHECK(by_task.at("worker 1") ==
          std::vector<std::string>{"task=worker-1 restart=0", "task=worker-1 restart=1", "task=worker-1 restart=2"});
    CHECK(Contains(run.err, "est-launch: worker 1 exited with status 3; stopped the other tasks; "
                            "restarting every task in 0.3 s (restart 1 of at most 3)"));
    CHECK(Contains(run.err, "restarting every task in 0.6 s (restart 2 of at most 3)"));
    CHECK_FALSE(Contains(run.err, "restart 3 of"));
    CHECK_FALSE(Contains(run.err, "est-launch: error:"));
  }
  SECTION("too few restarts: the last failure is the error") {
    LaunchRun run = RunLaunch({"--workers", "2", "--max-restarts", "1", "--", "sh", "-c", script}, "launch_restarts_out");
    INFO(run.out << run.err);
    CHECK(run.exit_code == 1);
    CHECK(ByTask(run.out).at("worker 1").size() == 2);
    CHECK(Contains(run.err, "restarting every task in 1 s (restart 1 of at most 1)"));  // the default first wait
    CHECK(Lines(run.err).back() == "est-launch: error: worker 1 exited with status 3; stopped the other tasks");
  }
  SECTION("a signal to est-launch is not a failure to restart from") {
    const fs::path dir = est::testing::FreshTempDir("launch_restarts_signal");
    const Launch launch =
        Start({"--workers", "1", "--max-restarts", "3", "--", "sh", "-c", SleeperScript(0), "sh", dir.string()}, dir);
    REQUIRE(WaitForPidFiles(dir, 2).size() == 2);  // the shell and its sleep
    ::kill(launch.pid, SIGTERM);
    LaunchRun run = Finish(launch);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 128 + SIGTERM);
    CHECK_FALSE(Contains(run.err, "restarting"));
  }
  SECTION("a signal while waiting to restart ends the launch there") {
    const fs::path dir = est::testing::FreshTempDir("launch_restarts_backoff_signal");
    const Launch launch = Start({"--workers", "1", "--max-restarts", "3", "--restart-backoff-secs", "30", "--", "sh",
                                 "-c", "echo started; exit 3"},
                                dir);
    // Once the task has failed and est-launch says it waits 30 s, stop it.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!Contains(ReadFile(launch.dir / "err"), "restarting every task in 30 s") && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto signalled = Clock::now();
    ::kill(launch.pid, SIGTERM);
    LaunchRun run = Finish(launch);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 128 + SIGTERM);
    CHECK(Clock::now() - signalled < std::chrono::seconds(5));  // at once, not after the 30 s wait
    CHECK(Contains(run.err, "restarting every task in 30 s (restart 1 of at most 3)"));
    CHECK(Contains(run.err, "est-launch: caught SIGTERM while waiting to restart; not restarting"));
    CHECK(ByTask(run.out).at("worker 0").size() == 1);
  }
}

TEST_CASE("est-launch binds chief and workers to disjoint CPUs, as mpirun --bind-to core does", "[launch]") {
  const std::vector<int> all = OwnCpus();
  REQUIRE(!all.empty());
  // The rule of --cpu-bind auto for 2 workers: blocks of floor(CPUs / 2), none below 2 CPUs.
  const size_t block = all.size() / 2;
  const std::vector<int> first(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(block));
  const std::vector<int> second(all.begin() + static_cast<std::ptrdiff_t>(block),
                                all.begin() + static_cast<std::ptrdiff_t>(2 * block));
  INFO("CPUs of the test: " << all.size());

  SECTION("auto, the default: workers on disjoint blocks with OMP_NUM_THREADS, the evaluator on all CPUs") {
    const ScopedEnv omp("OMP_NUM_THREADS", nullptr);
    LaunchRun run = RunLaunch({"--workers", "2", "--evaluator", "--", "sh", "-c", kCpuReportScript}, "launch_cpu_bind");
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    const auto reports = CpuReports(run.out);
    REQUIRE(reports.size() == 3);
    if (block > 0) {
      CHECK(reports.at("worker 0").cpus == first);
      CHECK(reports.at("worker 1").cpus == second);
      CHECK(reports.at("worker 0").omp == std::to_string(block));
      CHECK(reports.at("worker 1").omp == std::to_string(block));
      CHECK(Contains(run.err, "est-launch: binding worker 0 to CPU"));
    } else {  // one CPU for two workers: oversubscribed, nothing bound
      for (const char* worker : {"worker 0", "worker 1"}) {
        CHECK(reports.at(worker).cpus == all);
        CHECK(reports.at(worker).omp.empty());
      }
      CHECK(Contains(run.err, "est-launch: not binding tasks to CPUs: 2 training task(s) but only 1 CPU(s)"));
    }
    CHECK(reports.at("evaluator 0").cpus == all);
    CHECK(reports.at("evaluator 0").omp.empty());
  }
  SECTION("--cpu-bind none: every task on all CPUs, OMP_NUM_THREADS left unset") {
    const ScopedEnv omp("OMP_NUM_THREADS", nullptr);
    LaunchRun run = RunLaunch({"--workers", "2", "--cpu-bind", "none", "--", "sh", "-c", kCpuReportScript},
                              "launch_cpu_bind_none");
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    const auto reports = CpuReports(run.out);
    REQUIRE(reports.size() == 2);
    for (const auto& [label, report] : reports) {
      INFO(label);
      CHECK(report.cpus == all);
      CHECK(report.omp.empty());
    }
    CHECK_FALSE(Contains(run.err, "binding"));
  }
  SECTION("OMP_NUM_THREADS set by the user is kept") {
    const ScopedEnv omp("OMP_NUM_THREADS", "3");
    LaunchRun run = RunLaunch({"--workers", "2", "--", "sh", "-c", kCpuReportScript}, "launch_cpu_bind_omp");
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    const auto reports = CpuReports(run.out);
    REQUIRE(reports.size() == 2);
    CHECK(reports.at("worker 0").cpus == (block > 0 ? first : all));
    CHECK(reports.at("worker 1").cpus == (block > 0 ? second : all));
    for (const auto& [label, report] : reports) CHECK(report.omp == "3");
  }
}

TEST_CASE("est-launch rejects bad flags and commands it cannot run with one clear line", "[launch]") {
  SECTION("bad flags: one line, exit status 2") {
    const std::vector<std::vector<std::string>> bad_flags = {
        {},
        {"--workers", "1"},
        {"--", "true"},
        {"--workers", "0", "--", "true"},
        {"--workers", "-1", "--chief", "--", "true"},
        {"--workers", "two", "--", "true"},
        {"--workers", "2", "--port", "65535", "--", "true"},
        {"--workers", "1", "--port", "0", "--", "true"},
        {"--workers", "1", "--grace-secs", "-1", "--", "true"},
        {"--workers", "1", "--host", "203.0.113.7", "--", "true"},
        {"--workers", "1", "--no-such-flag", "--", "true"},
        {"--workers", "1", "--cpu-bind", "sometimes", "--", "true"},
        {"--workers", "1", "--max-restarts", "-3", "--", "true"},
        {"--workers", "2", "--min-workers", "3", "--", "true"},
        {"--workers", "2", "--ps", "1", "--min-workers", "1", "--", "true"},
        {"--workers", "2", "--max-workers", "3", "--", "true"},
        {"--workers", "3", "--min-workers", "2", "--max-workers", "2", "--", "true"},
    };
    for (const auto& args : bad_flags) {
      std::string joined;
      for (const auto& arg : args) joined += arg + " ";
      INFO(joined);
      LaunchRun run = RunLaunch(args, "launch_flags");
      CHECK(run.exit_code == 2);
      CHECK(run.out.empty());
      CHECK(Lines(run.err).size() == 1);
      CHECK(run.err.rfind("est-launch: error: ", 0) == 0);
    }
    LaunchRun bad_bind = RunLaunch({"--workers", "1", "--cpu-bind", "sometimes", "--", "true"}, "launch_flags");
    CHECK(Contains(bad_bind.err, "--cpu-bind"));
    LaunchRun bad_restarts = RunLaunch({"--workers", "1", "--max-restarts", "-3", "--", "true"}, "launch_flags");
    CHECK(Contains(bad_restarts.err, "--max-restarts: expected an integer from 0 to 1000000, got '-3'"));
    LaunchRun too_many = RunLaunch({"--chief", "--workers", "2", "--min-workers", "4", "--", "true"}, "launch_flags");
    CHECK(Contains(too_many.err, "--min-workers 4 exceeds the 3 training tasks (chief and workers)"));
    LaunchRun too_few =
        RunLaunch({"--workers", "3", "--min-workers", "2", "--max-workers", "2", "--", "true"}, "launch_flags");
    CHECK(Contains(too_few.err, "--max-workers 2 is fewer than the 3 training tasks (chief and workers)"));
    LaunchRun alone = RunLaunch({"--workers", "2", "--max-workers", "3", "--", "true"}, "launch_flags");
    CHECK(Contains(alone.err, "--max-workers needs --min-workers: a group grows only with in-job recovery"));
    LaunchRun bad_backoff = RunLaunch({"--workers", "1", "--restart-backoff-secs", "1e300", "--", "true"}, "launch_flags");
    CHECK(Contains(bad_backoff.err, "--restart-backoff-secs: expected a number of seconds from 0 to 86400, got '1e300'"));
    LaunchRun help = RunLaunch({"--help"}, "launch_help");
    CHECK(help.exit_code == 0);
    CHECK(Contains(help.out, "--grace-secs"));
    CHECK(Contains(help.out, "TF_CONFIG"));
    CHECK(Contains(help.out, "--cpu-bind"));
  }
  SECTION("a command that is not found or not executable") {
    LaunchRun missing = RunLaunch({"--workers", "2", "--", "est-launch-no-such-command", "--flag"}, "launch_missing");
    INFO(missing.err);
    CHECK(missing.exit_code == 127);
    CHECK(missing.out.empty());
    CHECK(Lines(missing.err).back() ==
          "est-launch: error: worker 0: cannot execute 'est-launch-no-such-command': No such file or directory "
          "(not found in PATH)");

    const fs::path dir = est::testing::FreshTempDir("launch_not_executable");
    std::ofstream(dir / "script.sh") << "#!/bin/sh\necho hi\n";
    LaunchRun not_executable = RunLaunch({"--workers", "1", (dir / "script.sh").string()}, "launch_not_executable_run");
    INFO(not_executable.err);
    CHECK(not_executable.exit_code == 126);
    CHECK(Contains(not_executable.err, "cannot execute '" + (dir / "script.sh").string() + "': Permission denied"));
  }
}
