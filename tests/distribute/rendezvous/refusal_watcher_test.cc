#include <spdlog/sinks/ostream_sink.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/rendezvous/refusal_watcher.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/store.h"

using namespace est::distribute;
using namespace std::chrono_literals;

TEST_CASE("RefusalWatcher warns of a rank of another job that tries the chief's store after the rendezvous",
          "[distribute]") {
  TcpStoreOptions server_options;
  server_options.is_server = true;
  server_options.timeout = 5s;
  auto server = CreateTcpStore(server_options);
  RendezvousOptions alpha;
  alpha.job_id = "alpha";
  alpha.timeout = 5s;
  Rendezvous(server, alpha);
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  sink->set_pattern("%l: %v");
  est::Log().sinks().push_back(sink);
  {
    RefusalWatcher watcher(server, "alpha", 20ms);
    TcpStoreOptions client_options;
    client_options.port = server->port();
    client_options.timeout = 5s;
    RendezvousOptions beta = alpha;
    beta.job_id = "beta";
    CHECK_THROWS_AS(Rendezvous(CreateTcpStore(client_options), beta), est::ConfigError);
    std::this_thread::sleep_for(200ms);
  }
  est::Log().sinks().pop_back();
  CHECK(captured.str() == "warning: rendezvous of job 'alpha' at TCP store 127.0.0.1:" +
                              std::to_string(server->port()) +
                              ": refused job 'beta' (rank 0 of 1), which presented another job id\n");
}
