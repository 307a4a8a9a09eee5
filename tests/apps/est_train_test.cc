// est-train as a user runs it: flags, errors, restart and resume, accuracy.

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/config.h"
#include "estimator/export/export_directory.h"
#include "estimator/summary/event_reader.h"
#include "tests/apps/run_command.h"
#include "tests/test_util.h"
#if EST_WITH_KERNELS
#include "kernels/cpu_op_replacements.h"
#endif

namespace fs = std::filesystem;

namespace {

using est::testing::RunCommand;
using est::testing::RunResult;

RunResult RunEstTrain(const std::string& args) { return RunCommand(std::string(EST_TRAIN_PATH) + " " + args); }

// (tag, step) -> value as TensorBoard's EventAccumulator reads a run directory.
std::map<std::pair<std::string, int64_t>, double> TensorBoardScalars(const std::string& run_dir) {
  RunResult dump = RunCommand(std::string(TENSORBOARD_PYTHON) + " " + DUMP_SCALARS_SCRIPT + " " + run_dir);
  INFO(dump.output << "\n(the TensorBoard environment comes from `make tensorboard`)");
  REQUIRE(dump.exit_code == 0);
  std::map<std::pair<std::string, int64_t>, double> scalars;
  std::istringstream lines(dump.output);
  std::string tag;
  int64_t step;
  double value;
  while (std::getline(lines, tag, '\t') && lines >> step >> value) {
    scalars[{tag, step}] = value;
    lines.ignore(1);
  }
  return scalars;
}

// (tag, step) -> value as our own reader reads every event file of a directory.
std::map<std::pair<std::string, int64_t>, double> OurScalars(const std::string& run_dir) {
  std::map<std::pair<std::string, int64_t>, double> scalars;
  for (const auto& file : est::ListEventFiles(run_dir))
    for (const auto& event : est::ReadScalarEvents(file)) scalars[{event.tag, event.step}] = event.value;
  return scalars;
}

int CountLines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

double FinalMetric(const std::string& output, const std::string& metric) {
  std::regex line("Saving dict for global step \\d+: .*" + metric + " = ([0-9.e+-]+)");
  double value = -1;
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it)
    value = std::stod((*it)[1].str());
  return value;
}

}  // namespace

TEST_CASE("est-train rejects bad flags with one clear line", "[apps]") {
  const std::string dir = est::testing::FreshTempDir("est_train_flags").string();
  for (const std::string& args : {"--model resnet --model-dir " + dir, "--model-dir " + dir + " --max-steps -3",
                                  "--model-dir " + dir + " --batch-size abc", "--unknown-flag 1 --model-dir " + dir,
                                  std::string("--model linear")}) {
    INFO(args);
    RunResult result = RunEstTrain(args);
    CHECK(result.exit_code == 2);
    CHECK(CountLines(result.output) == 1);
    CHECK(result.output.rfind("est-train: error: ", 0) == 0);
  }
  // The line names the flag, the value given and what was expected.
  const std::vector<std::pair<std::string, std::vector<std::string>>> named = {
      {"--model resnet", {"--model", "resnet", "fashion_mnist_cnn,linear"}},
      {"--max-steps -3", {"--max-steps: expected an integer from 1 to 9223372036854775807, got '-3'"}},
      {"--max-steps 2.5", {"--max-steps: expected an integer from 1 to 9223372036854775807, got '2.5'"}},
      {"--max-steps 1e30", {"--max-steps: expected an integer from 1 to 9223372036854775807, got '1e30'"}},
      {"--max-steps 9223372036854775808",
       {"--max-steps: expected an integer from 1 to 9223372036854775807, got '9223372036854775808'"}},
      {"--batch-size abc", {"--batch-size: expected an integer from 1 to 9223372036854775807, got 'abc'"}},
      {"--save-checkpoints-steps 0",
       {"--save-checkpoints-steps: expected an integer from 1 to 9223372036854775807, got '0'"}},
      {"--seed -1", {"--seed: expected an integer from 0 to 18446744073709551615, got '-1'"}},
      {"--learning-rate -0.1", {"--learning-rate: expected a number above 0 to 1000000, got '-0.1'"}},
      {"--throttle-secs -1", {"--throttle-secs: expected a number of seconds from 0 to 31536000, got '-1'"}},
      {"--timeout-secs nan", {"--timeout-secs: expected a number of seconds from 0.001 to 31536000, got 'nan'"}},
      {"--timeout-secs 1e300", {"--timeout-secs: expected a number of seconds from 0.001 to 31536000, got '1e300'"}},
      {"--bucket-cap-mb 1e15", {"--bucket-cap-mb: expected a number of MiB from 0.001 to 1048576, got '1e15'"}},
      {"--bucket-cap-mb 1e-12", {"--bucket-cap-mb: expected a number of MiB from 0.001 to 1048576, got '1e-12'"}},
      {"--strategy ring", {"--strategy", "ring", "multi_worker"}},
      {"--mixed-precision half", {"--mixed-precision", "half", "none,bfloat16,float16"}},
      {"--gradient-compression int8", {"--gradient-compression", "int8", "none,fp16,bf16,powersgd"}},
      {"--gradient-overlap sometimes", {"--gradient-overlap", "sometimes", "auto,always,never"}},
      {"--communication mpi", {"--communication", "mpi", "auto,nccl,ring"}},
      {"--powersgd-rank 0", {"--powersgd-rank: expected an integer from 1 to 64, got '0'"}},
      {"--logical-input-shards 65537",
       {"--logical-input-shards: expected an integer from 0 to 65536, got '65537'"}},
      {"--logical-input-shards 2.5", {"--logical-input-shards: expected an integer from 0 to 65536, got '2.5'"}},
      {"--powersgd-warmup-steps -1",
       {"--powersgd-warmup-steps: expected an integer from 0 to 9223372036854775807, got '-1'"}},
      {"--channels-last nhwc", {"--channels-last", "nhwc", "auto,on,off"}},
      {"--clip-norm 0", {"--clip-norm: expected a norm above 0 to 1e+30, got '0'"}},
      {"--ema-decay 1.5", {"--ema-decay: expected a decay from 0 to 1, got '1.5'"}},
      {"--warmup-steps -1", {"--warmup-steps: expected an integer from 0 to 9223372036854775807, got '-1'"}},
      {"--keep-best-by accuracy", {"--keep-best-by", "'accuracy'", "expected METRIC:max or METRIC:min"}},
      {"--keep-best 2", {"--keep-best requires --keep-best-by"}},
      {"--export newest", {"--export", "newest", "latest", "best", "final"}},
      {"--exports-to-keep 2", {"--exports-to-keep requires --export"}},
      {"--export latest --exports-to-keep 0", {"--exports-to-keep: expected an integer from 1"}},
      {"--lr-schedule 'Cosine(decay_steps=5)'", {"--lr-schedule", "unknown schedule 'Cosine'", "CosineDecay"}},
      {"--lr-schedule 'CosineDecay(decay_steps=0)'", {"CosineDecay: decay_steps is 0; expected a number of steps > 0"}},
      {"--lr-schedule 'Constant(learning_rate=1e308)'",
       {"Constant: learning_rate is 1e+308; expected a finite learning rate >= 0, at most 3.40282e+38"}},
      {"--early-stopping accuracy:max", {"--early-stopping", "expected METRIC:max:STEPS or METRIC:min:STEPS"}},
      {"--devices ''", {"--devices", "'' names no device"}},
      {"--devices ,", {"--devices", "',' names no device"}},
      {"--early-stopping accuracy:up:10", {"--early-stopping", "'accuracy:up:10'"}},
      {"--unknown-flag 1", {"--unknown-flag"}},
  };
  for (const auto& [args, parts] : named) {
    RunResult result = RunEstTrain(args + " --model-dir " + dir);
    for (const std::string& part : parts) {
      INFO(args << " -> " << result.output);
      CHECK(result.exit_code == 2);
      CHECK(result.output.find(part) != std::string::npos);
    }
  }
  CHECK(RunEstTrain("--model linear").output.find("--model-dir is required") != std::string::npos);
  // A valid flag that the strategy would not use.
  RunResult compression = RunEstTrain("--gradient-compression fp16 --strategy mirrored --model-dir " + dir);
  CHECK(compression.exit_code == 1);
  CHECK(compression.output.find("--gradient-compression fp16 compresses the all-reduce between workers: it needs "
                                "--strategy multi_worker, not mirrored") != std::string::npos);
  RunResult overlap = RunEstTrain("--gradient-overlap never --strategy mirrored --model-dir " + dir);
  CHECK(overlap.exit_code == 1);
  CHECK(overlap.output.find("--gradient-overlap never times the all-reduce between workers: it needs "
                            "--strategy multi_worker, not mirrored") != std::string::npos);
  RunResult communication = RunEstTrain("--communication ring --strategy mirrored --model-dir " + dir);
  CHECK(communication.exit_code == 1);
  CHECK(communication.output.find("--communication ring chooses the all-reduce between workers: it needs "
                                  "--strategy multi_worker, not mirrored") != std::string::npos);
  // A schedule that gives its own starting rate beside --learning-rate; one that overflows
  // before max_steps: both before the first step.
  RunResult both_rates = RunEstTrain("--model linear --learning-rate 0.5 --lr-schedule 'CosineDecay(0.1, 100)' "
                                     "--model-dir " + dir);
  CHECK(both_rates.exit_code == 1);
  CHECK(both_rates.output.find("--learning-rate 0.5 would not be used: --lr-schedule 'CosineDecay(0.1, 100)' gives its "
                               "own starting rate; give the rate in one of the two") != std::string::npos);
  for (const std::string flag : {"--keep-best-by auc:max", "--early-stopping auc:max:100"}) {
    RunResult metric = RunEstTrain("--model linear " + flag + " --model-dir " + dir);
    CHECK(metric.exit_code == 1);
    CHECK(metric.output.find(flag.substr(0, flag.find(' ')) + " names metric 'auc', which --model linear does not "
                             "report; its evaluation reports loss, mean_squared_error") != std::string::npos);
    CHECK(metric.output.find("loss =") == std::string::npos);  // no step was taken
  }
  RunResult growing = RunEstTrain("--model linear --max-steps 1000 --lr-schedule 'ExponentialDecay(0.1, 1, 10.0)' "
                                  "--model-dir " + dir);
  CHECK(growing.exit_code == 1);
  CHECK(growing.output.find("learning-rate schedule ExponentialDecay(") != std::string::npos);
  CHECK(growing.output.find("; a learning rate must be finite and >= 0") != std::string::npos);
  CHECK(growing.output.find("loss =") == std::string::npos);  // no step was taken
  RunResult rank = RunEstTrain("--powersgd-rank 4 --gradient-compression fp16 --strategy multi_worker --model-dir " + dir);
  CHECK(rank.exit_code == 1);
  CHECK(rank.output.find("--powersgd-rank and --powersgd-warmup-steps apply to --gradient-compression powersgd, "
                         "not fp16") != std::string::npos);
  // Input flags that the chosen model or data format would not read.
  const std::vector<std::pair<std::string, std::string>> unread = {
      {"--model linear --data-dir /tmp", "--data-dir applies to --model fashion_mnist_cnn; --model linear makes its "
                                         "own data"},
      {"--data-compression gzip", "--data-compression applies to --data-format tfrecord; IDX files (--data-format "
                                  "idx) are read as they are"},
      {"--data-format tfrecord --data-files 'a*' --eval-data-files 'b*' --data-dir /tmp",
       "--data-dir applies to --data-format idx; --data-format tfrecord reads --data-files and --eval-data-files"},
  };
  for (const auto& [args, message] : unread) {
    RunResult result = RunEstTrain(args + " --model-dir " + dir);
    INFO(args << " -> " << result.output);
    CHECK(result.exit_code == 1);
    CHECK(result.output == "est-train: error: " + message + "\n");
  }
  // --chief-address amends the ranks of torchrun, MPI or Slurm, and the evaluator meets no chief.
  const std::string torchrun = "env RANK=1 WORLD_SIZE=2 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 ";
  const std::vector<std::pair<std::string, std::string>> cluster_flags = {
      {std::string(EST_TRAIN_PATH) + " --chief-address 10.0.0.1:29500",
       "--chief-address applies to ranks that torchrun, MPI or Slurm give; no launcher's variables describe a "
       "cluster (a local run)"},
      {"env TF_CONFIG='{\"cluster\": {\"worker\": [\"a:1\", \"b:2\"]}, \"task\": {\"type\": \"worker\", "
       "\"index\": 1}}' " + std::string(EST_TRAIN_PATH) + " --chief-address 10.0.0.1:29500",
       "--chief-address applies to ranks that torchrun, MPI or Slurm give; TF_CONFIG names the chief itself (a:1)"},
      {torchrun + EST_TRAIN_PATH + " --chief-address node0",
       "--chief-address: address \"node0\" is not \"host:port\" (no port)"},
      {torchrun + EST_TRAIN_PATH + " --evaluator --chief-address 10.0.0.1:29500",
       "--chief-address names the training group's chief; the evaluator (--evaluator) connects to no one"},
  };
  for (const auto& [command, message] : cluster_flags) {
    RunResult result = RunCommand(command + " --model linear --strategy multi_worker --model-dir " + dir);
    INFO(command << " -> " << result.output);
    CHECK(result.exit_code == 1);
    CHECK(result.output.find("est-train: error: " + message + "\n") != std::string::npos);
  }
  RunResult help = RunEstTrain("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("--save-checkpoints-steps") != std::string::npos);
  // The kernels fitted to the demo CNN run only when asked for; the exact replacements of
  // LibTorch's slow kernels by default, where they are built.
  const std::string kernels_default = EST_WITH_KERNELS ? "--kernels TEXT:{off,ops,model}=ops" : "--kernels TEXT:{off,ops,model}=off";
  const size_t kernels_at = help.output.find(kernels_default);
  REQUIRE(kernels_at != std::string::npos);
  CHECK(std::isspace(static_cast<unsigned char>(help.output[kernels_at + kernels_default.size()])));
}

TEST_CASE("est-train names a chief's host that does not resolve at once", "[apps]") {
  const auto dir = est::testing::FreshTempDir("est_train_resources");
  const std::string train = std::string(EST_TRAIN_PATH) + " --model linear --strategy multi_worker --timeout-secs 3 "
                            "--model-dir " + (dir / "model").string();
  RunResult unresolved = RunCommand(
      "TF_CONFIG='{\"cluster\": {\"worker\": [\"est-no-such-host.invalid:1234\", \"127.0.0.1:1235\"]}, "
      "\"task\": {\"type\": \"worker\", \"index\": 1}}' " + train);
  INFO(unresolved.output);
  CHECK(unresolved.exit_code == 1);
  const size_t warned = unresolved.output.find(
      "store client: the chief's host 'est-no-such-host.invalid' does not resolve (");
  CHECK(warned != std::string::npos);
  CHECK(warned < unresolved.output.find("est-train: error: "));
  CHECK(unresolved.output.find("The host 'est-no-such-host.invalid' does not resolve") != std::string::npos);
}

TEST_CASE("est-train under a file size limit fails its save as on a full disk, and a batch too big to hold is an "
          "error", "[apps]") {
  const auto dir = est::testing::FreshTempDir("est_train_limits");
  // ulimit -f 200: 100 KiB (dash counts 512-byte blocks), less than the CNN's checkpoint.
  const std::string model_dir = (dir / "small_disk").string();
  RunResult limited = RunCommand("sh -c 'ulimit -f 200 && exec " + std::string(EST_TRAIN_PATH) +
                                 " --model-dir " + model_dir + " --max-steps 2 --save-checkpoints-steps 1'");
  INFO(limited.output);
  CHECK(limited.exit_code == 1);
  CHECK_THAT(limited.output, Catch::Contains("est-train: error: ") && Catch::Contains(model_dir + "/model.ckpt-"));
  for (const auto& entry : fs::directory_iterator(model_dir))
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
  // est-train's linear model has elements of two scalars: a billion of them cannot be held.
  RunResult huge = RunEstTrain("--model linear --batch-size 1000000000 --model-dir " + (dir / "huge").string());
  CHECK(huge.exit_code == 1);
  CHECK_THAT(huge.output, Catch::Contains("est-train: error: ") &&
                              Catch::Contains("Dataset::batch: a batch of 1000000000 elements of 8 bytes each") &&
                              Catch::Contains("use a smaller batch_size"));
}

TEST_CASE("est-train reports a missing data directory and an unwritable model_dir", "[apps]") {
  const auto dir = est::testing::FreshTempDir("est_train_errors");
  RunResult no_data = RunEstTrain("--model-dir " + (dir / "m").string() + " --data-dir " + (dir / "nodata").string());
  CHECK(no_data.exit_code == 1);
  CHECK(CountLines(no_data.output) == 1);
  CHECK(no_data.output.find((dir / "nodata").string()) != std::string::npos);

  { std::FILE* f = std::fopen((dir / "file").c_str(), "w"); std::fclose(f); }
  // A file given for --data-dir says so; a missing evaluation split stops before training.
  RunResult file_data = RunEstTrain("--model-dir " + (dir / "m").string() + " --data-dir " + (dir / "file").string());
  CHECK(file_data.exit_code == 1);
  CHECK(file_data.output == "est-train: error: --data-dir '" + (dir / "file").string() +
                                "' is a file; expected the directory of the Fashion-MNIST IDX files\n");
  const fs::path train_only = dir / "train_only";
  fs::create_directories(train_only);
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"})
    fs::create_symlink(fs::path("/usr/share/datasets/fashion-mnist") / name, train_only / name);
  RunResult no_t10k = RunEstTrain("--model-dir " + (dir / "m2").string() + " --data-dir " + train_only.string());
  CHECK(no_t10k.exit_code == 1);
  CHECK(no_t10k.output == "est-train: error: MNIST data: neither " + (train_only / "t10k-images-idx3-ubyte.gz").string() +
                              " nor " + (train_only / "t10k-images-idx3-ubyte").string() + " exists\n");
  CHECK_FALSE(fs::exists(dir / "m2" / "checkpoint"));

  const std::string unwritable = (dir / "file" / "model").string();
  RunResult bad_dir = RunEstTrain("--model linear --model-dir " + unwritable);
  CHECK(bad_dir.exit_code == 1);
  CHECK(CountLines(bad_dir.output) == 1);
  CHECK(bad_dir.output.find(unwritable) != std::string::npos);
}

TEST_CASE("est-train --mixed-precision trains in bfloat16 on the CPU and refuses float16 there", "[apps]") {
  const std::string dir = est::testing::FreshTempDir("est_train_mixed").string();
  RunResult bf16 = RunEstTrain("--model linear --model-dir " + dir + " --max-steps 50 --mixed-precision bfloat16");
  INFO(bf16.output);
  REQUIRE(bf16.exit_code == 0);
  CHECK(FinalMetric(bf16.output, "mean_squared_error") < 1e-3);
  RunResult fp16 = RunEstTrain("--model linear --model-dir " + dir + " --max-steps 60 --mixed-precision float16");
  INFO(fp16.output);
  CHECK(fp16.exit_code == 1);
  CHECK(fp16.output.find("est-train: error: mixed precision float16 needs CUDA devices, but the replica is on cpu") !=
        std::string::npos);
}

TEST_CASE("est-train --lr-schedule, --warmup-steps, --clip-norm and --ema-decay reach TensorBoard and checkpoints",
          "[apps]") {
  const std::string dir = est::testing::FreshTempDir("est_train_recipe").string();
  RunResult run = RunEstTrain("--model linear --model-dir " + dir + " --max-steps 101 --learning-rate 0.2 "
                              "--lr-schedule 'ExponentialDecay(decay_steps=10, decay_rate=0.5)' --warmup-steps 5 "
                              "--clip-norm 0.5 --ema-decay 0.9");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(FinalMetric(run.output, "mean_squared_error") < 1e-3);
  // Summaries at global steps 1 and 101: the rates of steps 0 (the warmup's start) and 100.
  const auto scalars = OurScalars(dir);
  CHECK(scalars.at({"learning_rate", 1}) == 0.0);
  CHECK(scalars.at({"learning_rate", 101}) == Approx(0.2 * std::pow(0.5, (100 - 5) / 10.0)).epsilon(1e-6));
  CHECK(scalars.at({"global_norm/gradient_norm", 1}) > 0.5);  // the first gradient is clipped
  // The moving averages are checkpointed beside the weights.
  const est::checkpoint::CheckpointReader checkpoint(est::checkpoint::LatestCheckpoint(dir).value());
  CHECK(checkpoint.has_tensor("dense/weight/ExponentialMovingAverage"));
  CHECK(checkpoint.has_tensor("dense/bias/ExponentialMovingAverage"));
}

TEST_CASE("est-train --keep-best-by keeps the best evaluated checkpoint beside the newest five, and --export "
          "exports the latest, the best and the final one", "[apps]") {
  const std::string dir = est::testing::FreshTempDir("est_train_keep_best").string();
  // The worst loss is the best by loss:max: the first checkpoint evaluated, older than the newest five.
  RunResult run = RunEstTrain("--model linear --model-dir " + dir + " --max-steps 80 --save-checkpoints-steps 10 "
                              "--log-step-count-steps 100 --keep-best-by loss:max --export latest --export best "
                              "--export final --exports-to-keep 2");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto evaluated = est::ReadEvalMetrics(dir + "/eval");
  REQUIRE(evaluated.size() >= 7);
  const int64_t worst = std::max_element(evaluated.begin(), evaluated.end(), [](const auto& a, const auto& b) {
                          return a.second.at("loss") < b.second.at("loss");
                        })->first;
  REQUIRE(worst < 40);
  std::vector<std::string> listed;
  const std::optional<est::checkpoint::CheckpointState> state = est::checkpoint::ReadCheckpointState(dir);
  for (const auto& path : state.value().all_model_checkpoint_paths)
    listed.push_back(std::filesystem::path(path).filename().string());
  CHECK(listed == std::vector<std::string>{"model.ckpt-" + std::to_string(worst), "model.ckpt-40", "model.ckpt-50",
                                           "model.ckpt-60", "model.ckpt-70", "model.ckpt-80"});
  CHECK(est::checkpoint::CheckpointExists(dir + "/model.ckpt-" + std::to_string(worst)));
  for (const int64_t step : {10, 20, 30})
    if (step != worst) CHECK_FALSE(est::checkpoint::CheckpointExists(dir + "/model.ckpt-" + std::to_string(step)));

  // The exports, each with the model's name, the signature of a request and the global step.
  auto exported_steps = [&](const std::string& kind) {
    std::vector<int64_t> steps;
    for (int64_t version : est::ExportVersions(dir + "/export/" + kind)) {
      const est::LoadedExport loaded = est::ReadExport(est::ExportVersionPath(dir + "/export/" + kind, version));
      CHECK(loaded.manifest.model == est::ModelIdentity{"linear", "1"});
      CHECK(loaded.manifest.inputs.at(0).describe() == "x: float32 [-1, 1]");
      steps.push_back(loaded.manifest.global_step);
    }
    return steps;
  };
  CHECK((exported_steps("latest") == std::vector<int64_t>{70, 80}));
  CHECK((exported_steps("final") == std::vector<int64_t>{80}));
  // Each evaluation of a higher loss than every earlier one was exported: the last, the worst.
  const std::vector<int64_t> best = exported_steps("best");
  REQUIRE(!best.empty());
  CHECK(best.back() == worst);
}

TEST_CASE("est-train stopped and started again continues from the saved global step", "[apps]") {
  const std::string dir = est::testing::FreshTempDir("est_train_resume").string();
  RunResult first = RunEstTrain("--model linear --model-dir " + dir + " --max-steps 30 --save-checkpoints-steps 10 --log-step-count-steps 10");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-30");

  RunResult second = RunEstTrain("--model linear --model-dir " + dir + " --max-steps 50 --save-checkpoints-steps 10 --log-step-count-steps 10");
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK(second.output.find("Restoring parameters from " + dir + "/model.ckpt-30") != std::string::npos);
  CHECK(second.output.find("Saving checkpoints for 40 into") != std::string::npos);
  CHECK(second.output.find("Saving checkpoints for 10 into") == std::string::npos);
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-50");
  // y = 1 from x = 1 is learnt: the README's linear model converges.
  CHECK(FinalMetric(second.output, "mean_squared_error") < 1e-4);
  CHECK(est::ReadEvalMetrics(dir + "/eval").count(50) == 1);

  // TensorBoard reads the training and evaluation summaries exactly as we wrote them.
  for (const std::string& run : {dir, dir + "/eval"}) {
    INFO(run);
    auto ours = OurScalars(run);
    CHECK(TensorBoardScalars(run) == ours);
    std::set<std::string> tags;
    for (const auto& [key, value] : ours) tags.insert(key.first);
    CHECK(tags == (run == dir ? std::set<std::string>{"global_step/sec", "loss"}
                              : std::set<std::string>{"loss", "mean_squared_error"}));
  }
}

TEST_CASE("est-train reaches 0.80 Fashion-MNIST accuracy in 400 steps", "[apps][slow]") {
  const std::string dir = est::testing::FreshTempDir("est_train_fashion").string();
  // Channels-last on (the CPU's default is off, which every other est-train run here takes).
  RunResult run = RunEstTrain("--model fashion_mnist_cnn --model-dir " + dir +
                              " --max-steps 400 --save-checkpoints-steps 400 --eval-steps 40 --channels-last on");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("loss = ") != std::string::npos);
  CHECK(run.output.find("global_step/sec: ") != std::string::npos);
  CHECK(FinalMetric(run.output, "accuracy") >= 0.80);
}

// [kernels_build]: what this case asserts depends on whether the kernels are built; make test runs
// it in both of its trees, with the kernels (the sanitizer tree) and without (the checks tree).
TEST_CASE("est-train --kernels off trains the CNN on LibTorch's layers, and --kernels ops and model continue "
          "its checkpoint",
          "[apps][slow][kernels_build]") {
  const std::string dir = est::testing::FreshTempDir("est_train_kernels").string();
  const std::string flags = "--model fashion_mnist_cnn --model-dir " + dir + " --save-checkpoints-steps 200 --eval-steps 40";
  RunResult stock = RunEstTrain(flags + " --max-steps 200 --kernels off");
  INFO(stock.output);
  REQUIRE(stock.exit_code == 0);
  CHECK(FinalMetric(stock.output, "accuracy") >= 0.75);
  if (!EST_WITH_KERNELS) {
    for (const std::string kernels : {"ops", "model"}) {
      RunResult refused = RunEstTrain(flags + " --max-steps 400 --kernels " + kernels);
      CHECK(refused.exit_code == 1);
      CHECK(refused.output.find("est-train: error: --kernels " + kernels + " asks for the kernels of kernels/, but "
                                "this build left them out (EST_WITH_KERNELS=OFF)") != std::string::npos);
    }
    return;
  }
  CHECK(stock.output.find("replaced by est::kernels'") == std::string::npos);
  // The same parameters under the same keys: each run restores the one before's checkpoint.
  RunResult ops = RunEstTrain(flags + " --max-steps 300 --kernels ops");
  INFO(ops.output);
  REQUIRE(ops.exit_code == 0);
  CHECK(ops.output.find("Restoring parameters from " + dir + "/model.ckpt-200") != std::string::npos);
#if EST_WITH_KERNELS
  // The pooling everywhere; the matrix products where oneDNN's brgemm kernel runs (AVX-512).
  std::string replaced;
  for (const std::string& op : est::kernels::ReplacedCpuOps()) replaced += (replaced.empty() ? "" : ", ") + op;
  REQUIRE(replaced.find("aten::max_pool2d_with_indices, aten::max_pool2d (autograd)") == 0);
  CHECK(ops.output.find("LibTorch's CPU kernels of " + replaced +
                        " replaced by est::kernels' (RunConfig::replace_slow_cpu_ops)") != std::string::npos);
#endif
  RunResult kernels = RunEstTrain(flags + " --max-steps 400 --kernels model");
  INFO(kernels.output);
  REQUIRE(kernels.exit_code == 0);
  CHECK(kernels.output.find("Restoring parameters from " + dir + "/model.ckpt-300") != std::string::npos);
  CHECK(FinalMetric(kernels.output, "accuracy") >= 0.80);
}
