// One job owns a model_dir for writing: a second is refused naming the owner; the lock goes
// when its owner is destroyed or killed; the evaluator reads without it.

#include "estimator/model_dir_lock.h"

#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "estimator/estimator.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

using namespace est;
using est::testing::FreshTempDir;

namespace {

std::string HostName() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// The message of the ConfigError that taking the lock of `dir` throws; empty when it does not.
std::string RefusalOf(const std::string& dir) {
  try {
    ModelDirLock lock(dir);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("ModelDirLock refuses a second owner, naming the first, until the first lets go", "[estimator]") {
  const std::string dir = FreshTempDir("lock_second").string();
  ::setenv("EST_JOB_ID", "job-a", 1);
  std::optional<ModelDirLock> first(std::in_place, dir);
  ::unsetenv("EST_JOB_ID");
  CHECK(first->held());
  CHECK_THAT(RefusalOf(dir),
             Catch::StartsWith("model_dir " + dir + " is in use by job 'job-a' (host " + HostName() + ", pid " +
                               std::to_string(::getpid()) + ", since ") &&
                 Catch::Contains(" UTC): two jobs writing one model_dir would overwrite each other's checkpoints. "
                                 "Stop that job or train into another model_dir"));
  first.reset();
  CHECK(RefusalOf(dir).empty());
  ModelDirLock again(dir);
  CHECK(again.held());
}

TEST_CASE("ModelDirLock is free at once when its owner is killed", "[estimator]") {
  const std::string dir = FreshTempDir("lock_killed").string();
  const std::string path = dir + "/" + kModelDirLockName;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t owner = ::fork();
  REQUIRE(owner >= 0);
  if (owner == 0) {  // only async-signal-safe calls in the child of a threaded process
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    while (true) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  // The owner wrote no name (it is not a ModelDirLock): the refusal says so.
  CHECK_THAT(RefusalOf(dir), Catch::Contains("is in use by a process that has not yet written its name"));
  REQUIRE(::kill(owner, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(owner, &status, 0) == owner);
  CHECK(RefusalOf(dir).empty());
}

TEST_CASE("a second training job on a model_dir is refused at start, evaluation needs no lock", "[estimator]") {
  const std::string dir = FreshTempDir("lock_estimator").string();
  RunConfig config;
  config.save_checkpoints_steps = 5;
  Estimator(est::testing::RegressionModelFn, dir, config)
      .train([] { return est::testing::RegressionData(8, /*repeat=*/true); }, TrainOptions().max_steps(5));
  ModelDirLock other_job(dir);
  Estimator second(est::testing::RegressionModelFn, dir, config);
  CHECK_THROWS_MATCHES(
      second.train([] { return est::testing::RegressionData(8, /*repeat=*/true); }, TrainOptions().max_steps(10)),
      ConfigError, est::testing::MessageMatches(Catch::StartsWith("model_dir " + dir + " is in use by ")));
  CHECK(second.get_variable_value("global_step").item<int64_t>() == 5);  // nothing trained or written
  CHECK(second.evaluate([] { return est::testing::RegressionData(8, /*repeat=*/false, std::nullopt); })
            .at("global_step") == 5);
}
