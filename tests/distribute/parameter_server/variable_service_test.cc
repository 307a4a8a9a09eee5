// A ps task's variable service: shards in, updates applied once each, values and optimizer
// state out, a 64 MB variable exactly, and the refusals (another job, a restarted task, a
// gradient of the wrong shape, an unreachable task).

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "common/error.h"
#include "distribute/parameter_server/shard_optimizer.h"
#include "distribute/parameter_server/variable_server.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"
#include "tests/tls_certificates.h"

using namespace est::distribute;
namespace ps = est::ps;
using namespace std::chrono_literals;

namespace {

VariableServiceOptions Options(int task = 0, uint16_t port = 0) {
  VariableServiceOptions options;
  options.task = task;
  options.port = port;
  options.job_id = "job-ps";
  options.token = "secret";
  options.timeout = 5s;
  return options;
}

ps::ShardSpec Spec(uint32_t id, const std::string& variable, const at::Tensor& value, bool sgd = true) {
  ps::ShardSpec spec;
  spec.set_id(id);
  spec.set_variable(variable);
  spec.set_parts(1);
  for (int64_t size : value.sizes()) spec.add_shape(size);
  spec.set_dtype(static_cast<int32_t>(value.scalar_type()));
  if (sgd) {
    spec.mutable_optimizer()->set_kind("SGD");
    spec.mutable_optimizer()->set_lr(0.5);
  }
  return spec;
}

ps::PushRequest PushHeader(uint32_t worker, uint64_t sequence, uint64_t incarnation) {
  ps::PushRequest header;
  header.set_worker(worker);
  header.set_sequence(sequence);
  header.set_incarnation(incarnation);
  header.set_input_position(static_cast<int64_t>(sequence) * 10);
  return header;
}

}  // namespace

TEST_CASE("a ps task holds its shards, applies each push once and serves the values", "[distribute][ps]") {
  auto server = VariableServer::Start(Options());
  VariableClient client(Options(0, server->port()));
  ps::DescribeReply before = client.describe_task();
  CHECK_FALSE(before.initialized());
  CHECK(before.incarnation() == server->incarnation());

  const at::Tensor w = torch::arange(6, torch::kFloat).reshape({2, 3});
  const at::Tensor b = torch::zeros({3}, torch::kDouble);
  const std::vector<ps::ShardSpec> specs = {Spec(0, "w", w), Spec(1, "b", b, /*sgd=*/false)};
  CHECK(client.initialize(42, specs, {{0, "", w}, {1, "", b}}, /*global_step=*/7, {{0, 3}}));
  // The chief restarting: the task keeps its own values.
  CHECK_FALSE(client.initialize(42, specs, {{0, "", w * 0}, {1, "", b}}, 0, {}));
  CHECK_THROWS_WITH(client.initialize(43, specs, {{0, "", w}, {1, "", b}}, 0, {}),
                    Catch::Contains("ps 0 at 127.0.0.1:") && Catch::Contains("another placement plan"));

  const at::Tensor grad = torch::ones({2, 3});
  ps::PushRequest header = PushHeader(1, 1, server->incarnation());
  (*header.mutable_optimizers())[0] = specs[0].optimizer();
  CHECK(client.push(header, {{0, "grad", grad}, {1, "grad", torch::ones({3}, torch::kDouble)}}).global_step() == 8);
  // The same push again (a retry after a lost reply) is not applied twice.
  CHECK(client.push(header, {{0, "grad", grad}}).global_step() == 8);
  // A learning-rate change travels with the push.
  header = PushHeader(1, 2, server->incarnation());
  (*header.mutable_optimizers())[0] = specs[0].optimizer();
  (*header.mutable_optimizers())[0].set_lr(1.0);
  CHECK(client.push(header, {{0, "grad", grad}}).global_step() == 9);

  PulledValues values = client.pull(1, /*with_state=*/true);
  CHECK(values.global_step == 9);
  CHECK(values.incarnation == server->incarnation());
  CHECK(torch::equal(values.tensors.at({0, ""}), w - 0.5 - 1.0));
  CHECK(torch::equal(values.tensors.at({1, ""}), b));  // no optimizer: the gradient is not applied
  CHECK(values.input_positions == std::map<uint32_t, int64_t>{{0, 3}, {1, 20}});
  CHECK(client.describe_task().global_step() == 9);

  // Every task counts the global step alike (task 0's is the job's).
  auto second = VariableServer::Start(Options(1));
  VariableClient second_client(Options(1, second->port()));
  CHECK(second_client.initialize(42, {Spec(0, "w", w)}, {{0, "", w}}, 7, {}));
  CHECK(second_client.push(PushHeader(0, 1, second->incarnation()), {{0, "grad", grad}}).global_step() == 8);
}

TEST_CASE("a 64 MB variable and its optimizer state round-trip exactly", "[distribute][ps]") {
  auto server = VariableServer::Start(Options());
  VariableClient client(Options(0, server->port()));
  torch::manual_seed(3);
  const at::Tensor big = torch::randn({4096, 4096});  // 64 MiB
  ps::ShardSpec spec = Spec(0, "big", big);
  spec.mutable_optimizer()->set_momentum(0.9);
  const at::Tensor momentum = torch::randn({4096, 4096});
  REQUIRE(client.initialize(1, {spec}, {{0, "", big}, {0, "momentum_buffer", momentum}}, 0, {}));
  PulledValues values = client.pull(0, /*with_state=*/true);
  CHECK(torch::equal(values.tensors.at({0, ""}), big));
  CHECK(torch::equal(values.tensors.at({0, "momentum_buffer"}), momentum));
  // One push of a 64 MiB gradient, then the values: momentum 0.9 * m + g, w - lr * that.
  const at::Tensor grad = torch::randn({4096, 4096});
  ps::PushRequest header = PushHeader(0, 1, server->incarnation());
  (*header.mutable_optimizers())[0] = spec.optimizer();
  client.push(header, {{0, "grad", grad}});
  const at::Tensor expected_momentum = momentum * 0.9 + grad;
  CHECK(torch::equal(client.pull(0, false).tensors.at({0, ""}), big - expected_momentum * 0.5));
}

TEST_CASE("a ps task refuses other jobs, stale pushes and gradients of the wrong shape", "[distribute][ps]") {
  est::testing::LogCapture log(20);
  auto server = VariableServer::Start(Options(2));
  const at::Tensor w = torch::zeros({4, 2});
  VariableClient client(Options(2, server->port()));
  client.initialize(5, {Spec(0, "net/w", w)}, {{0, "", w}}, 0, {});

  VariableServiceOptions foreign = Options(2, server->port());
  foreign.job_id = "job-other";
  CHECK_THROWS_MATCHES(VariableClient(foreign).pull(0, false), est::ConfigError,
                       est::testing::MessageMatches(Catch::Contains("ps 2 at") &&
                                                    Catch::Contains("refused by the ps 2 of job 'job-ps'") &&
                                                    Catch::Contains("came from job 'job-other'")));
  VariableServiceOptions no_token = Options(2, server->port());
  no_token.token = "";
  CHECK_THROWS_WITH(VariableClient(no_token).describe_task(), Catch::Contains("job token is missing or wrong"));
  CHECK_THAT(log.text(), Catch::Contains("ps 2 of job 'job-ps' at 127.0.0.1:") && Catch::Contains("refused a call from"));

  CHECK_THROWS_AS(client.push(PushHeader(0, 1, server->incarnation() + 1), {{0, "grad", torch::ones({4, 2})}}),
                  PsRestarted);
  CHECK_THROWS_WITH(client.push(PushHeader(0, 2, server->incarnation()), {{0, "grad", torch::ones({2, 4})}}),
                    Catch::Contains("gradient of 'net/w' part 0 has shape [2, 4], its shard [4, 2]"));
  CHECK_THROWS_WITH(client.push(PushHeader(0, 3, server->incarnation()), {{7, "grad", torch::ones({2})}}),
                    Catch::Contains("shard 7, which this task does not hold"));
  CHECK(torch::equal(client.pull(0, false).tensors.at({0, ""}), w));  // nothing was applied
}

TEST_CASE("a ps task refuses a worker whose optimizer differs from another's at the same step", "[distribute][ps]") {
  auto server = VariableServer::Start(Options());
  VariableClient client(Options(0, server->port()));
  const at::Tensor w = torch::zeros({4, 2});
  const ps::ShardSpec spec = Spec(0, "net/w", w);
  REQUIRE(client.initialize(5, {spec}, {{0, "", w}}, 0, {}));
  const at::Tensor grad = torch::ones({4, 2});
  auto push = [&](uint32_t worker, uint64_t sequence, int64_t step, double lr, double momentum) {
    ps::PushRequest header = PushHeader(worker, sequence, server->incarnation());
    header.set_options_step(step);
    ps::OptimizerConfig& options = (*header.mutable_optimizers())[0];
    options = spec.optimizer();
    options.set_lr(lr);
    options.set_momentum(momentum);
    return client.push(header, {{0, "grad", grad}});
  };
  push(0, 1, 0, 0.5, 0);
  // Worker 1 computed on the same values with another learning rate and momentum.
  CHECK_THROWS_MATCHES(push(1, 1, 0, 0.05, 0.9), est::ConfigError,
                       est::testing::MessageMatches(Catch::Contains(
                           "the optimizers of the workers differ: at global step 0, 'net/w' is stepped by worker 0 "
                           "and worker 1 with lr 0.5 and 0.05, momentum 0 and 0.9. Every worker's model_fn must "
                           "build the same optimizer")));
  CHECK(torch::equal(client.pull(0, false).tensors.at({0, ""}), w - 0.5));  // worker 1's push was not applied
  // A schedule changes the options with the global step, alike on every worker.
  push(0, 2, 1, 0.25, 0);
  push(1, 2, 1, 0.25, 0);
  CHECK(torch::equal(client.pull(0, false).tensors.at({0, ""}), w - 1.0));
}

TEST_CASE("an unreachable ps task is named within the timeout, and Finish ends a task's wait", "[distribute][ps]") {
  uint16_t port = 0;
  {
    auto probe = VariableServer::Start(Options());  // a port nothing listens on once it is gone
    port = probe->port();
  }
  VariableServiceOptions options = Options(1, port);
  options.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(VariableClient(options).describe_task(), est::CommunicationError,
                       est::testing::MessageMatches(Catch::Contains("ps 1 at 127.0.0.1:" + std::to_string(port)) &&
                                                    Catch::Contains("is the ps task running")));
  CHECK(std::chrono::steady_clock::now() - start < 3s);

  auto server = VariableServer::Start(Options());
  CHECK_FALSE(server->wait_finished(10ms));
  const at::Tensor w = torch::zeros({2});
  VariableClient worker(Options(0, server->port()));
  worker.initialize(1, {Spec(0, "w", w)}, {{0, "", w}}, 0, {});
  worker.pull(1, false);  // worker 1 is training
  std::thread chief([port = server->port()] { VariableClient(Options(0, port)).finish(/*job=*/true, 0); });
  // Finished: the task serves on for the grace while worker 1 has not been told.
  const auto finishing = std::chrono::steady_clock::now();
  CHECK(server->wait_finished(5s, 200ms));
  CHECK(std::chrono::steady_clock::now() - finishing >= 200ms);
  chief.join();
  CHECK_THROWS_AS(worker.pull(1, false), PsJobFinished);
  CHECK_THROWS_WITH(worker.push(PushHeader(1, 1, server->incarnation()), {}), Catch::Contains("finished the job"));
  const auto waited = std::chrono::steady_clock::now();
  CHECK(server->wait_finished(5s, 5s));  // nobody left to tell: at once
  CHECK(std::chrono::steady_clock::now() - waited < 1s);
}

TEST_CASE("sync updates average replicas_to_aggregate pushes, drop late ones and stop waiting for a silent worker",
          "[distribute][ps]") {
  est::testing::LogCapture log(20);
  auto server = VariableServer::Start(Options());
  VariableClient client(Options(0, server->port()));
  const at::Tensor w = torch::zeros({2});
  // Three workers; a step applies the mean of two pushes (one backup worker).
  ps::UpdateRule rule;
  rule.set_mode(ps::UpdateRule::SYNC);
  rule.set_replicas_to_aggregate(2);
  rule.set_num_workers(3);
  rule.set_liveness_ms(400);
  const ps::ShardSpec spec = Spec(0, "w", w);  // SGD, lr 0.5
  REQUIRE(client.initialize(1, {spec}, {{0, "", w}}, 0, {}, {}, rule));
  std::map<uint32_t, uint64_t> sequences;
  auto push = [&](uint32_t worker, int64_t step, float gradient) {
    ps::PushRequest header = PushHeader(worker, ++sequences[worker], server->incarnation());
    header.set_step(step);
    (*header.mutable_optimizers())[0] = spec.optimizer();
    return std::async(std::launch::async, [&client, header, gradient] {
      return client.push(header, {{0, "grad", torch::full({2}, gradient)}});
    });
  };
  auto values = [&] { return client.pull(0, false).tensors.at({0, ""}); };

  // Step 0: the first push waits for the second; both answer once their mean is applied.
  auto first = push(0, 0, 1.0f);
  auto second = push(1, 0, 3.0f);
  CHECK(first.get().global_step() == 1);
  CHECK(second.get().global_step() == 1);
  CHECK(torch::equal(values(), torch::full({2}, -1.0f)));  // 0 - 0.5 * (1 + 3) / 2
  // The backup worker's gradients for step 0 come late: dropped, nothing applied.
  const auto late_sent = std::chrono::steady_clock::now();
  const ps::PushReply late = push(2, 0, 100.0f).get();
  CHECK(late.dropped());
  CHECK(late.global_step() == 1);
  CHECK(client.describe_task().dropped_pushes() == 1);
  CHECK(torch::equal(values(), torch::full({2}, -1.0f)));

  // Workers 1 and 2 fall silent: after the liveness time the step no longer waits for two
  // pushes, and a warning names each worker left out.
  const ps::PushReply alone = push(0, 1, 2.0f).get();
  CHECK(std::chrono::steady_clock::now() - late_sent >= 400ms);  // worker 2 was heard from at the earliest then
  CHECK_FALSE(alone.dropped());
  CHECK(alone.global_step() == 2);
  CHECK(torch::equal(values(), torch::full({2}, -2.0f)));
  CHECK_THAT(log.text(), Catch::Contains("worker 1 sent nothing for") && Catch::Contains("worker 2 sent nothing for") &&
                             Catch::Contains("steps no longer wait for it"));
  // A worker heard from again counts again (worker 0 counts while its push waits).
  client.pull(1, false);
  auto back = push(1, 2, 2.0f);
  auto with_it = push(0, 2, 4.0f);
  CHECK(back.get().global_step() == 3);
  CHECK(with_it.get().global_step() == 3);
  CHECK(torch::equal(values(), torch::full({2}, -3.5f)));

  // The chief finishing the job ends a step's wait (rather than the liveness time applying it
  // alone): the waiting push is told the job is over.
  auto waiting = push(1, 3, 1.0f);
  std::this_thread::sleep_for(100ms);
  client.finish(/*job=*/true, 0);
  CHECK_THROWS_AS(waiting.get(), PsJobFinished);
  CHECK(client.describe_task().global_step() == 3);
}

TEST_CASE("a ps task over TLS serves clients that trust its authority only", "[distribute][ps]") {
  const std::filesystem::path dir = est::testing::FreshTempDir("ps_tls");
  est::testing::MakeCertificate(dir, "ca");
  est::testing::MakeCertificate(dir, "other_ca");
  est::testing::MakeCertificate(dir, "server", "ca");
  VariableServiceOptions server_options = Options();
  server_options.tls = {(dir / "ca.pem").string(), (dir / "server.pem").string(), (dir / "server.key").string()};
  auto server = VariableServer::Start(server_options);

  // Tensor frames (a few chunks of a 12 MB variable) cross TLS exactly.
  VariableServiceOptions trusting = Options(0, server->port());
  trusting.tls.ca_file = (dir / "ca.pem").string();
  VariableClient client(trusting);
  const at::Tensor w = torch::randn({3000, 1000});
  REQUIRE(client.initialize(1, {Spec(0, "w", w)}, {{0, "", w}}, 0, {}));
  ps::PushRequest header = PushHeader(0, 1, server->incarnation());
  (*header.mutable_optimizers())[0] = Spec(0, "w", w).optimizer();
  const at::Tensor grad = torch::randn({3000, 1000});
  CHECK(client.push(header, {{0, "grad", grad}}).global_step() == 1);
  CHECK(torch::equal(client.pull(0, false).tensors.at({0, ""}), w - grad * 0.5));

  VariableServiceOptions plain = Options(0, server->port());
  plain.timeout = 500ms;
  CHECK_THROWS_MATCHES(VariableClient(plain).describe_task(), est::CommunicationError,
                       est::testing::MessageMatches(
                           Catch::Contains("ps 0 at 127.0.0.1:" + std::to_string(server->port())) &&
                           Catch::Contains("A ps task that serves TLS takes only clients that trust its authority")));
  VariableServiceOptions wrong_ca = plain;
  wrong_ca.tls.ca_file = (dir / "other_ca.pem").string();
  CHECK_THROWS_MATCHES(VariableClient(wrong_ca).describe_task(), est::CommunicationError,
                       est::testing::MessageMatches(Catch::Contains("the ps task's certificate must be signed by " +
                                                                    wrong_ca.tls.ca_file)));
}

TEST_CASE("a finished ps task serves on until every worker of the job has been told", "[distribute][ps]") {
  auto server = VariableServer::Start(Options());
  VariableClient client(Options(0, server->port()));
  const at::Tensor w = torch::zeros({2});
  ps::UpdateRule rule;
  rule.set_num_workers(3);
  REQUIRE(client.initialize(1, {Spec(0, "w", w)}, {{0, "", w}}, 0, {}, {}, rule));
  client.finish(/*job=*/true, 0);
  client.finish(/*job=*/false, 1);  // worker 1 left; worker 2 has not been heard from
  std::promise<void> told;
  std::thread late_worker([&] {
    std::this_thread::sleep_for(300ms);
    try {
      client.pull(2, false);
    } catch (const PsJobFinished&) {
      told.set_value();
    }
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK(server->wait_finished(5s, 5s));
  const auto waited = std::chrono::steady_clock::now() - start;
  late_worker.join();
  CHECK(waited >= 300ms);  // until worker 2 came and was told, not the whole grace
  CHECK(waited < 4s);
  CHECK(told.get_future().wait_for(0s) == std::future_status::ready);
}
