// The chief's store over gRPC: every Store operation, waits and their timeouts, the job id
// and token checks, a client that starts before its server, a 16 MB value, hostile clients
// (silent, garbage, refused) and where it cannot serve or connect.

#include "distribute/rendezvous/grpc_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/stop_signals.h"
#include "tests/log_capture.h"
#include "tests/loopback.h"
#include "tests/test_util.h"

#if EST_UNDER_ASAN
#include <sanitizer/allocator_interface.h>
#endif

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

namespace {

GrpcStoreOptions Options(uint16_t port = 0, std::string token = "secret") {
  GrpcStoreOptions options;
  options.port = port;
  options.job_id = "job-a";
  options.token = std::move(token);
  options.timeout = 5s;
  return options;
}

// A port a store server listened on and no longer does: a chief that is not up yet.
// Runs `body` on a thread of its own, joined when this object goes (also when the test's
// thread leaves by an exception, which would otherwise end the process).
class JoinedThread {
 public:
  template <typename Body>
  explicit JoinedThread(Body body) : thread_(std::move(body)) {}
  ~JoinedThread() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

// How many times `needle` occurs in `text`.
size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("clients of one gRPC store server share its keys", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  REQUIRE(server->port() > 0);
  auto store = CreateGrpcStore(Options(server->port()));
  auto other = CreateGrpcStore(Options(server->port()));
  store->set("a", std::string("v\0w", 3));
  CHECK(other->get("a", 1s) == std::string("v\0w", 3));
  CHECK(store->add("n", 5) == 5);
  CHECK(other->add("n", -2) == 3);
  CHECK(other->list("") == std::vector<std::string>{"a", "n"});
  CHECK(other->remove("a"));
  CHECK_FALSE(store->check({"a"}));
  // A wait of one client is woken by the other's set, not by polling.
  std::thread late([&] {
    std::this_thread::sleep_for(100ms);
    other->set("later", "x");
  });
  const auto start = std::chrono::steady_clock::now();
  store->wait({"n", "later"}, 5s);
  late.join();
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("the gRPC store refuses another job id or a wrong token, naming the peer once", "[distribute]") {
  est::testing::LogCapture log;
  auto server = GrpcStoreServer::Start(Options());
  auto wrong_token = CreateGrpcStore(Options(server->port(), "guess"));
  CHECK_THROWS_MATCHES(wrong_token->set("k", "v"), est::ConfigError,
                       MessageMatches(Catch::Contains("job token is missing or wrong")));
  CHECK_THROWS_AS(wrong_token->get("k", 1s), est::ConfigError);
  auto no_token = CreateGrpcStore(Options(server->port(), ""));
  CHECK_THROWS_AS(no_token->check({"k"}), est::ConfigError);
  GrpcStoreOptions other_job = Options(server->port());
  other_job.job_id = "job-b";
  CHECK_THROWS_MATCHES(CreateGrpcStore(other_job)->add("k", 1), est::ConfigError,
                       MessageMatches(Catch::Contains("refused by the store of job 'job-a': the call came from job 'job-b'")));
  // What the peer sent is shown cut to 64 characters.
  GrpcStoreOptions long_job = Options(server->port());
  long_job.job_id = std::string(100, 'x');
  CHECK_THROWS_MATCHES(CreateGrpcStore(long_job)->set("k", "v"), est::ConfigError,
                       MessageMatches(Catch::Contains("came from job '" + std::string(64, 'x') + "...'")));
  // Nothing a refused call sent was stored.
  auto right = CreateGrpcStore(Options(server->port()));
  CHECK_FALSE(right->check({"k"}));
  // Each refused peer is logged once, by its address: four clients, five refused calls.
  server.reset();
  CHECK(Occurrences(log.text(), "refused a call from ipv4:127.0.0.1:") == 4);
}

TEST_CASE("a gRPC store client that starts before its server connects once it listens", "[distribute]") {
  est::testing::ReservedPort reserved;
  const uint16_t port = reserved.port();
  auto store = CreateGrpcStore(Options(port));
  std::unique_ptr<GrpcStoreServer> server;
  JoinedThread starter([&] {
    std::this_thread::sleep_for(300ms);
    reserved.release();
    server = GrpcStoreServer::Start(Options(port));
    CreateGrpcStore(Options(port))->set("ready", "1");
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK(store->get("ready", 5s) == "1");
  const auto waited = std::chrono::steady_clock::now() - start;
  starter.join();
  CHECK(waited < 1s);
}

TEST_CASE("a gRPC store client waiting for its chief to listen says so every progress_interval", "[distribute]") {
  est::testing::ReservedPort reserved;
  const uint16_t port = reserved.port();
  GrpcStoreOptions options = Options(port);
  options.progress_interval = 150ms;
  est::testing::LogCapture log;
  SECTION("the chief comes up: the call succeeds after the lines") {
    auto store = CreateGrpcStore(options);
    std::unique_ptr<GrpcStoreServer> server;
    JoinedThread starter([&] {
      std::this_thread::sleep_for(600ms);
      reserved.release();
      server = GrpcStoreServer::Start(Options(port));
    });
    store->set("k", "v");
    starter.join();
    CHECK(store->get("k", 1s) == "v");
    CHECK(Occurrences(log.text(), "info: store 127.0.0.1:" + std::to_string(port) +
                                      ": waiting for the chief to listen (job 'job-a'); ") >= 1);
    CHECK(Occurrences(log.text(), " of 5 s passed\n") >= 1);
  }
  SECTION("it never does: the timeout's error follows them") {
    options.timeout = 700ms;
    CHECK_THROWS_MATCHES(CreateGrpcStore(options)->set("k", "v"), est::CommunicationError,
                         MessageMatches(Catch::Contains("unreachable for 700 ms")));
    CHECK(Occurrences(log.text(), ": waiting for the chief to listen (job 'job-a'); ") >= 1);
    CHECK(Occurrences(log.text(), ": waiting for the chief to listen") <= 5);
  }
  SECTION("a progress interval of 0 is refused") {
    options.progress_interval = 0ms;
    CHECK_THROWS_MATCHES(CreateGrpcStore(options), est::ConfigError,
                         MessageMatches(Catch::Contains("progress interval must be positive, got 0 ms")));
  }
}

TEST_CASE("a 16 MB value round-trips through the gRPC store", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  auto store = CreateGrpcStore(Options(server->port()));
  std::string value(16 << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>((i * 7919) >> 3);
  store->set("big", value);
  CHECK(store->get("big", 5s) == value);
}

TEST_CASE("an unreachable gRPC store is a CommunicationError after the timeout", "[distribute]") {
  const est::testing::ReservedPort reserved;
  const uint16_t port = reserved.port();
  GrpcStoreOptions options = Options(port);
  options.timeout = 300ms;
  CHECK_THROWS_MATCHES(CreateGrpcStore(options)->set("k", "v"), est::CommunicationError,
                       MessageMatches(Catch::Contains("127.0.0.1:" + std::to_string(port)) &&
                                      Catch::Contains("unreachable")));
}

namespace {

// A raw TCP connection to the server that sends what it is given and reads nothing.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) : fd_(est::testing::ConnectToLoopback(port)) {}
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  void Send(const std::string& bytes) { REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) >= 0); }

 private:
  int fd_;
};

// The memory this process holds: its resident bytes, or under AddressSanitizer (whose
// quarantine keeps freed blocks resident a while) the bytes allocated and not freed.
int64_t HeldBytes() {
#if EST_UNDER_ASAN
  return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  int64_t resident = 0;
  statm >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
#endif
}

}  // namespace

TEST_CASE("clients that stall or send garbage do not delay the others", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  auto store = CreateGrpcStore(Options(server->port()));
  store->set("warm", "1");
  std::vector<std::unique_ptr<RawConnection>> strangers;
  std::string garbage;
  for (int i = 0; i < 256; ++i) garbage.push_back(static_cast<char>(i * 37 + 11));
  for (int i = 0; i < 20; ++i) {
    strangers.push_back(std::make_unique<RawConnection>(server->port()));  // silent
    strangers.push_back(std::make_unique<RawConnection>(server->port()));
    strangers.back()->Send("PRI * HTTP/2.0\r\n\r\nSM");  // a preface cut short, then nothing
    strangers.push_back(std::make_unique<RawConnection>(server->port()));
    strangers.back()->Send(garbage);
    strangers.push_back(std::make_unique<RawConnection>(server->port()));
    // A whole preface and a frame header announcing 16 KB that never come.
    strangers.back()->Send(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\x00\x40\x00\x00\x00\x00\x00\x00\x01", 9));
  }
  // Every call of a well-behaved client is served at once: 50 of them in well under a second.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 25; ++i) {
    store->set("k" + std::to_string(i), std::to_string(i));
    CHECK(store->get("k" + std::to_string(i), 1s) == std::to_string(i));
  }
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  // And a client that connects now, after them, too.
  const auto fresh_start = std::chrono::steady_clock::now();
  CHECK(CreateGrpcStore(Options(server->port()))->get("k3", 1s) == "3");
  CHECK(std::chrono::steady_clock::now() - fresh_start < 1s);
}

namespace {

// A process that connects from 127.0.0.2 to 127.0.0.1:port for `duration`, as fast as it can:
// closing each connection at once (`hold` 0), or keeping the last `hold` open without sending
// a byte. After fork() it makes system calls only.
pid_t Flood(uint16_t port, std::chrono::milliseconds duration, size_t hold) {
  const sockaddr_in server = est::testing::LoopbackAddress(port);
  sockaddr_in source{};
  source.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.2", &source.sin_addr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid > 0) return pid;
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;  // the flood holds what it can, not what the server may
  ::setrlimit(RLIMIT_NOFILE, &files);
  std::array<int, 4096> held;
  held.fill(-1);
  size_t next = 0;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t end_ms = now.tv_sec * 1000 + now.tv_nsec / 1000000 + duration.count();
  const timeval connect_limit{0, 200000};
  while (now.tv_sec * 1000 + now.tv_nsec / 1000000 < end_ms) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &connect_limit, sizeof(connect_limit));
      ::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source));
      ::connect(fd, reinterpret_cast<const sockaddr*>(&server), sizeof(server));
      if (hold == 0) {
        ::close(fd);
      } else {
        if (held[next] >= 0) ::close(held[next]);
        held[next] = fd;
        next = (next + 1) % std::min(hold, held.size());
      }
    }
    ::clock_gettime(CLOCK_MONOTONIC, &now);
  }
  ::_exit(0);
}

// Flood processes, killed and reaped when the test ends.
class Floods {
 public:
  explicit Floods(std::vector<pid_t> pids) : pids_(std::move(pids)) {}
  ~Floods() {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }

 private:
  std::vector<pid_t> pids_;
};

// Lowers this process's soft limit on open files while it lives.
class FileLimit {
 public:
  explicit FileLimit(rlim_t files) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    rlimit lowered = saved_;
    lowered.rlim_cur = std::min(files, saved_.rlim_cur);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  }
  ~FileLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  FileLimit(const FileLimit&) = delete;
  FileLimit& operator=(const FileLimit&) = delete;

 private:
  rlimit saved_{};
};

size_t OpenFiles() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                           std::filesystem::directory_iterator()));
}

}  // namespace

TEST_CASE("the gRPC store serves its job under a connection flood from one address", "[distribute]") {
  FileLimit limit(1024);  // a common default
  auto server = GrpcStoreServer::Start(Options());
  const uint16_t port = server->port();
  auto store = CreateGrpcStore(Options(port));
  store->set("warm", "1");
  // One process connects and closes as fast as it can; another holds all it can open, silent.
  Floods floods({Flood(port, 6s, 0), Flood(port, 6s, 4096)});
  std::this_thread::sleep_for(500ms);
  // Meanwhile tasks of the job join: a new client's calls, and the first client's, are answered.
  const auto end = std::chrono::steady_clock::now() + 4s;
  std::chrono::steady_clock::duration worst{};
  size_t most_files = 0;
  int rounds = 0;
  for (; std::chrono::steady_clock::now() < end; ++rounds) {
    const auto start = std::chrono::steady_clock::now();
    const std::string value = std::to_string(rounds);
    REQUIRE_NOTHROW(CreateGrpcStore(Options(port))->set("joined", value));
    REQUIRE(store->get("joined", 1s) == value);
    worst = std::max(worst, std::chrono::steady_clock::now() - start);
    most_files = std::max(most_files, OpenFiles());
    std::this_thread::sleep_for(50ms);
  }
  INFO("slowest of " << rounds << " joins: " << std::chrono::duration_cast<std::chrono::milliseconds>(worst).count()
                     << " ms; most files open: " << most_files);
  CHECK(worst < 2s);
  CHECK(most_files < 1024 / 2);  // the flood's connections were closed, not held
}

TEST_CASE("refused requests cost the server no memory that stays", "[distribute]") {
  est::testing::LogCapture log(1000);
  auto server = GrpcStoreServer::Start(Options());
  const std::string value(1 << 20, 'x');
  // Refused sets of 1 MB each, from 300 connections (more peers than the server remembers).
  auto refused_sets = [&](int connections) {
    for (int i = 0; i < connections; ++i) {
      auto intruder = CreateGrpcStore(Options(server->port(), "guess"));
      CHECK_THROWS_AS(intruder->set("k" + std::to_string(i), value), est::ConfigError);
    }
  };
  refused_sets(50);  // warms gRPC's and malloc's pools
  const int64_t before = HeldBytes();
  refused_sets(250);
  const int64_t grown = HeldBytes() - before;
  INFO("held memory grew by " << grown << " bytes over 250 refused 1 MB requests");
  CHECK(grown < 16 * (1 << 20));  // 250 MB had the server kept what it refused
  CHECK_FALSE(CreateGrpcStore(Options(server->port()))->check({"k0"}));
  // The warnings stop at the bound on remembered peers, saying so.
  CHECK(Occurrences(log.text(), "refused a call from") == 256);
  CHECK_THAT(log.text(), Catch::Contains("256 peers refused; later ones are refused without a warning"));
}

TEST_CASE("a gRPC store whose server goes away is named within seconds", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  GrpcStoreOptions options = Options(server->port());
  options.timeout = 60s;
  auto store = CreateGrpcStore(options);
  store->set("k", "v");
  server.reset();
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(store->add("n", 1), est::CommunicationError,
                       MessageMatches(Catch::Contains("store 127.0.0.1:" + std::to_string(options.port)) &&
                                      Catch::Contains("add to 'n'") && Catch::Contains("stopped answering")));
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("a stop signal ends a gRPC store call that waits for a key or for the chief", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  GrpcStoreOptions options = Options(server->port());
  options.timeout = 60s;
  auto store = CreateGrpcStore(options);
  store->set("warm", "1");
  auto guard = std::make_unique<est::StopSignalGuard>();
  std::thread signaller([] {
    std::this_thread::sleep_for(300ms);
    ::kill(::getpid(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(store->get("never", 60s), est::Interrupted,
                       MessageMatches(Catch::Contains("store 127.0.0.1:" + std::to_string(options.port) +
                                                      ": get 'never' stopped by SIGTERM")));
  signaller.join();
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  // A task whose chief is not there (yet) stops too.
  GrpcStoreOptions absent = options;
  absent.port = GrpcStoreServer::Start(Options())->port();  // listened, and closed again
  const auto absent_start = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(CreateGrpcStore(absent)->add("rendezvous/job_claims", 1), est::Interrupted,
                       MessageMatches(Catch::Contains("add to 'rendezvous/job_claims' stopped by SIGTERM")));
  CHECK(std::chrono::steady_clock::now() - absent_start < 2s);
  guard.reset();
  est::StopSignalGuard{};  // a new outermost guard clears the signal for the tests after this one
}

TEST_CASE("the gRPC store names where it cannot serve or connect", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  CHECK_THROWS_MATCHES(GrpcStoreServer::Start(Options(server->port())), est::CommunicationError,
                       MessageMatches(Catch::Equals("cannot serve the job's store at 127.0.0.1:" +
                                                    std::to_string(server->port()) + ": port " +
                                                    std::to_string(server->port()) +
                                                    " is taken: another process listens there")));
  GrpcStoreOptions elsewhere = Options();
  elsewhere.host = "192.0.2.1";  // TEST-NET-1: no interface of this machine has it
  CHECK_THROWS_MATCHES(GrpcStoreServer::Start(elsewhere), est::CommunicationError,
                       MessageMatches(Catch::EndsWith("'192.0.2.1' is not an address of this machine; use one of "
                                                      "its own")));
  GrpcStoreOptions unresolved = Options();
  unresolved.host = "no-such-host.invalid";
  CHECK_THROWS_MATCHES(GrpcStoreServer::Start(unresolved), est::CommunicationError,
                       MessageMatches(Catch::Contains("the host 'no-such-host.invalid' does not resolve")));
  GrpcStoreOptions unknown = Options(1234);
  unknown.host = "no-such-host.invalid";
  unknown.timeout = 300ms;
  CHECK_THROWS_MATCHES(CreateGrpcStore(unknown)->set("k", "v"), est::CommunicationError,
                       MessageMatches(Catch::Contains("store no-such-host.invalid:1234") &&
                                      Catch::Contains("The host 'no-such-host.invalid' does not resolve")));
  CHECK_THROWS_AS(CreateGrpcStore(Options(0)), est::ConfigError);
}
