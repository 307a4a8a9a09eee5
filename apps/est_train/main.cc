// est-train: trains and evaluates a built-in model with train_and_evaluate.

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "apps/common/fashion_mnist_cnn.h"
#include "apps/common/number_checks.h"
#include "apps/common/parse_flags.h"
#include "apps/common/tls_flags.h"
#include "apps/est_train/canned_model.h"
#include "apps/est_train/cluster_flags.h"
#include "apps/est_train/models.h"
#include "apps/est_train/training_options.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/memory_limit.h"
#include "common/quoted_text.h"
#include "common/stop_signals.h"
#include "data/list_files.h"
#include "data/mnist.h"
#include "distribute/collective/collective_backend.h"
#include "distribute/default_devices.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/parameter_server_strategy.h"
#include "distribute/strategy.h"
#include "estimator/address_space_check.h"
#include "estimator/estimator.h"
#include "estimator/hooks/early_stopping.h"
#include "estimator/keep_best_checkpoints.h"
#include "estimator/process_tuning.h"
#include "estimator/schedules/schedule_text.h"
#include "estimator/train_and_evaluate.h"

namespace {

// The flags --model canned refuses (the spec gives what they would), and --batch-size, which
// it takes where the spec does not give train.batch_size.
constexpr const char* kCannedFlags[] = {"--learning-rate", "--lr-schedule", "--warmup-steps", "--clip-norm",
                                        "--batch-size"};

/// Where Debian's fortunes package puts its text, transformer_lm's corpus.
constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

struct Flags {
  std::string model = "fashion_mnist_cnn";
  std::string spec;  ///< --model canned: the spec file
  std::string model_dir;
  std::string data_dir = est_apps::kFashionMnistDir;
  std::string data_format = "idx";
  std::string data_files;
  std::string eval_data_files;
  std::string data_compression = "none";
  int64_t max_steps = 2000;
  int64_t batch_size = 64;
  double learning_rate = 0;
  std::string lr_schedule;
  int64_t warmup_steps = 0;
  double clip_norm = 0;
  double ema_decay = 0;
  std::string keep_best_by;
  int keep_best = 1;
  std::string early_stopping;
  std::vector<std::string> exports;
  int exports_to_keep = 5;
  int64_t save_checkpoints_steps = 500;
  int64_t eval_steps = 0;
  double throttle_secs = 0;
  int64_t log_step_count_steps = 100;
  uint64_t seed = 42;
  std::string strategy = "none";
  std::string devices;  ///< empty: each strategy's default (every GPU, the local rank's GPU, or the CPU)
  double start_delay_secs = 0;
  double timeout_secs = 300;
  double beat_lease_secs = 5;
  int64_t gradient_accumulation_steps = 1;
  int logical_input_shards = 0;
  double bucket_cap_mb = 25;
  std::string gradient_compression = "none";
  std::string gradient_overlap = "auto";
  std::string communication = "auto";
  int64_t powersgd_rank = 1;
  int64_t powersgd_warmup_steps = 0;
  bool powersgd_options_given = false;  ///< --powersgd-rank or --powersgd-warmup-steps was on the command line
  std::set<std::string> data_flags_given;  ///< the flags of the input (--data-*) on the command line
  std::set<std::string> canned_flags_given;  ///< the flags of kCannedFlags on the command line
  std::string mixed_precision = "none";
  std::string channels_last = "auto";
  std::string kernels = est_apps::kKernelsBuilt ? "ops" : "off";
  bool ignore_invalid_checkpoints = false;
  std::string job_token_file;
  std::string chief_address;
  bool evaluator = false;
  est_apps::TlsFlags tls;
  std::string ps_mode = "async";
  int staleness = 2;
  int replicas_to_aggregate = 0;
};

// --communication's help: the collective backends of this build, in the order auto tries them.
std::string CommunicationHelp() {
  std::string help = "multi_worker: how gradients travel between workers:";
  for (const auto& backend : est::distribute::CollectiveBackends()) {
    help += " " + backend.name + " (" + backend.description + (backend.missing.empty() ? "" : "; not in this build") +
            "),";
  }
  return help + " or auto (the first of these that serves every device and is in this build)";
}

// --early-stopping: METRIC:max|min:STEPS, the metric and its direction as --keep-best-by reads them.
struct EarlyStopping {
  est::KeepBestCheckpoints metric;
  int64_t steps_without_improvement = 0;
};

EarlyStopping ParseEarlyStopping(const std::string& text) {
  const size_t colon = text.rfind(':');
  const std::string steps = colon == std::string::npos ? std::string() : text.substr(colon + 1);
  EST_CHECK(colon != std::string::npos && !steps.empty() && steps.size() <= 18 &&
                std::all_of(steps.begin(), steps.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) &&
                (text.compare(colon - std::min<size_t>(colon, 4), 4, ":max") == 0 ||
                 text.compare(colon - std::min<size_t>(colon, 4), 4, ":min") == 0),
            est::ConfigError, "cannot read '", text,
            "' as an early-stopping rule: expected METRIC:max:STEPS or METRIC:min:STEPS, STEPS from 0 to "
            "999999999999999999 (e.g. accuracy:max:2000, loss:min:1000)");
  return {est::ParseKeepBestBy(text.substr(0, colon)), std::stoll(steps)};
}

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--model", flags.model, "Model to train")
      ->check(CLI::IsMember({"fashion_mnist_cnn", "linear", "transformer_lm", "canned"}))
      ->capture_default_str();
  app.add_option("--spec", flags.spec,
                 "--model canned: the JSON file naming a canned estimator of TensorFlow's (LinearClassifier, "
                 "DNNLinearCombinedClassifier, ...), its feature columns and parameters, the label and the TFRecord "
                 "or CSV files to train and evaluate on (docs/canned.md)");
  app.add_option("--model-dir", flags.model_dir, "Directory for checkpoints and summaries")->required();
  app.add_option("--data-dir", flags.data_dir,
                 "Directory with the Fashion-MNIST IDX files; for transformer_lm, the fortune files (default " +
                     std::string(kFortunesDir) + ")")
      ->capture_default_str();
  app.add_option("--data-format", flags.data_format,
                 "fashion_mnist_cnn's input: idx (--data-dir, in memory) or tfrecord (--data-files, streamed)")
      ->check(CLI::IsMember({"idx", "tfrecord"}))
      ->capture_default_str();
  app.add_option("--data-files", flags.data_files,
                 "tfrecord: glob of the training shards of tf.train.Example (image bytes, int64 label), e.g. "
                 "'dir/train-*.tfrecord' (est-idx-to-tfrecord writes them); sharded by file across workers");
  app.add_option("--eval-data-files", flags.eval_data_files, "tfrecord: glob of the evaluation shards");
  app.add_option("--data-compression", flags.data_compression, "tfrecord: the shards' compression")
      ->check(CLI::IsMember({"none", "gzip", "zlib"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--max-steps", flags.max_steps, "Train until this global step")
      ->check(est_apps::IntegerIn<int64_t>(1, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "Global batch size")
      ->check(est_apps::IntegerIn<int64_t>(1, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--learning-rate", flags.learning_rate,
                 "Learning rate (default: 0.001 Adam for fashion_mnist_cnn, 0.2 SGD for linear)")
      ->check(est_apps::NumberIn(0, 1e6, "a number", /*open_min=*/true));
  app.add_option("--lr-schedule", flags.lr_schedule,
                 "Learning rate as a function of the global step, written as TensorFlow's schedule is in Python, "
                 "e.g. 'CosineDecay(decay_steps=2000, alpha=0.1)'; initial_learning_rate defaults to "
                 "--learning-rate. One of " + est::schedules::LearningRateScheduleNames())
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              est::schedules::ParseLearningRateSchedule(text, 1.0);
              return "";
            } catch (const est::ConfigError& error) {
              return error.what();
            }
          },
          "SCHEDULE"));
  app.add_option("--warmup-steps", flags.warmup_steps,
                 "Raise the learning rate linearly from 0 to the schedule's first rate over this many steps, "
                 "then run the schedule from its step 0 (0: no warmup)")
      ->check(est_apps::IntegerIn<int64_t>(0, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--clip-norm", flags.clip_norm,
                 "Scale the averaged gradients down to this global norm where it is exceeded "
                 "(tf.clip_by_global_norm); the norm is written to TensorBoard")
      ->check(est_apps::NumberIn(0, 1e30, "a norm", /*open_min=*/true));
  app.add_option("--ema-decay", flags.ema_decay,
                 "Keep exponential moving averages of the weights with this decay (and TensorFlow's num_updates "
                 "warmup), checkpoint them, and evaluate with them (tf.train.ExponentialMovingAverage); 0: none")
      ->check(est_apps::NumberIn(0, 1, "a decay"));
  CLI::Option* keep_best_by = app.add_option("--keep-best-by", flags.keep_best_by,
                 "Also keep the best --keep-best checkpoints by this evaluation metric, however old: METRIC:max or "
                 "METRIC:min (e.g. accuracy:max; loss alone means loss:min), read from the evaluation's event files")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              est::ParseKeepBestBy(text);
              return "";
            } catch (const est::ConfigError& error) {
              return error.what();
            }
          },
          "METRIC:max|min"));
  app.add_option("--early-stopping", flags.early_stopping,
                 "Stop training once an evaluation metric has not improved for a number of global steps: "
                 "METRIC:max:STEPS (stop_if_no_increase_hook, e.g. accuracy:max:2000) or METRIC:min:STEPS "
                 "(stop_if_no_decrease_hook), read from the evaluation's event files at every checkpoint; an evaluator "
                 "task evaluates and exports the last checkpoint and exits")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              ParseEarlyStopping(text);
              return "";
            } catch (const est::ConfigError& error) {
              return error.what();
            }
          },
          "METRIC:max|min:STEPS"));
  app.add_option("--keep-best", flags.keep_best, "How many best checkpoints --keep-best-by keeps")
      ->check(est_apps::IntegerIn<int>(1, std::numeric_limits<int>::max()))
      ->needs(keep_best_by)
      ->capture_default_str();
  CLI::Option* exports = app.add_option("--export", flags.exports,
                 "Export for serving after evaluations into model_dir/export/<kind>/ (repeatable): latest (every "
                 "evaluated checkpoint), best (when an evaluation beats the earlier ones by --keep-best-by's metric, "
                 "else the lowest loss), final (the last evaluated checkpoint)")
      ->check(CLI::IsMember({"latest", "best", "final"}))
      ->take_all();
  app.add_option("--exports-to-keep", flags.exports_to_keep, "How many exports --export latest and best keep")
      ->check(est_apps::IntegerIn<int>(1, std::numeric_limits<int>::max()))
      ->needs(exports)
      ->capture_default_str();
  app.add_option("--save-checkpoints-steps", flags.save_checkpoints_steps, "Save a checkpoint every N steps")
      ->check(est_apps::IntegerIn<int64_t>(1, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--eval-steps", flags.eval_steps, "Batches per evaluation; 0 evaluates the whole test set")
      ->check(est_apps::IntegerIn<int64_t>(0, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--throttle-secs", flags.throttle_secs, "Minimum seconds between two evaluations")
      ->check(est_apps::NumberIn(0, est_apps::kMaxSeconds, "a number of seconds"))
      ->capture_default_str();
  app.add_option("--log-step-count-steps", flags.log_step_count_steps, "Log loss and speed every N steps")
      ->check(est_apps::IntegerIn<int64_t>(1, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--seed", flags.seed, "Random seed of the model and the input shuffle")
      ->check(est_apps::IntegerIn<uint64_t>(0, std::numeric_limits<uint64_t>::max()))
      ->capture_default_str();
  app.add_option("--strategy", flags.strategy,
                 "Distribution: none, one_device, mirrored (several local devices), multi_worker (the cluster of "
                 "TF_CONFIG, torchrun or Slurm) or parameter_server (TF_CONFIG with a ps job)")
      ->check(CLI::IsMember({"none", "one_device", "mirrored", "multi_worker", "parameter_server"}))
      ->capture_default_str();
  app.add_option("--ps-mode", flags.ps_mode,
                 "parameter_server: async (each push applied as it comes), bounded (async, at most --staleness "
                 "steps ahead of the slowest worker) or sync (pushes of a step averaged, as SyncReplicasOptimizer)")
      ->check(CLI::IsMember({"async", "bounded", "sync"}))
      ->capture_default_str();
  app.add_option("--staleness", flags.staleness,
                 "parameter_server, bounded: the most steps a worker may be ahead of the slowest live one")
      ->check(est_apps::IntegerIn<int>(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  app.add_option("--replicas-to-aggregate", flags.replicas_to_aggregate,
                 "parameter_server, sync: pushes averaged per step; 0 means every worker (fewer makes the slowest "
                 "workers backups whose late gradients are dropped)")
      ->check(est_apps::IntegerIn<int>(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  app.add_option("--devices", flags.devices,
                 "Comma-separated devices of this process's replicas, e.g. cuda:0,cuda:1 or cpu,cpu (default: "
                 "mirrored takes every GPU, the others the GPU of the task's local rank; the CPU where there is no "
                 "GPU)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.find_first_not_of(", ") == std::string::npos
                       ? "'" + text + "' names no device; expected e.g. cpu or cuda:0,cuda:1 (or leave the flag out)"
                       : "";
          },
          "DEVICES"));
  app.add_option("--timeout-secs", flags.timeout_secs,
                 "multi_worker, parameter_server: limit on waiting for peers and on every collective operation or "
                 "call to a ps task")
      ->check(est_apps::NumberIn(0.001, est_apps::kMaxSeconds, "a number of seconds"))
      ->capture_default_str();
  app.add_option("--beat-lease-secs", flags.beat_lease_secs,
                 "multi_worker with in-job recovery (est-launch --min-workers): how long the chief waits for a "
                 "worker's beat before it cuts that worker off and the group re-forms without it")
      ->check(est_apps::NumberIn(1, 86400, "a number of seconds"))
      ->capture_default_str();
  app.add_option("--gradient-accumulation-steps", flags.gradient_accumulation_steps,
                 "Sum the gradients of this many batches of --batch-size per optimizer step (one all-reduce)")
      ->check(est_apps::IntegerIn<int64_t>(1, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--logical-input-shards", flags.logical_input_shards,
                 "multi_worker: read the training input as this many shards shared out over the workers, recorded "
                 "in checkpoints, so a job restarted with another number of workers reads on exactly with the same "
                 "global batch (0: the checkpoint's number, else one per worker)")
      ->check(est_apps::IntegerIn<int>(0, est::kMaxLogicalInputShards))
      ->capture_default_str();
  app.add_option("--bucket-cap-mb", flags.bucket_cap_mb,
                 "multi_worker: gradient all-reduce buckets close at this many MiB (the first at 1 MiB)")
      ->check(est_apps::NumberIn(0.001, 1 << 20, "a number of MiB"))
      ->capture_default_str();
  app.add_option("--communication", flags.communication, CommunicationHelp())
      ->check(CLI::IsMember(est::distribute::CommunicationNames()))
      ->capture_default_str();
  app.add_option("--gradient-overlap", flags.gradient_overlap,
                 "multi_worker: all-reduce each full bucket while backward runs (always), after backward (never), "
                 "or decide (auto: after backward only where a shared-memory all-reduce has no core to spare)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--gradient-compression", flags.gradient_compression,
                 "multi_worker: all-reduce float32 gradients as fp16 or bf16 (half the bytes) or as PowerSGD's "
                 "low-rank factors, with error feedback")
      ->check(CLI::IsMember({"none", "fp16", "bf16", "powersgd"}))
      ->capture_default_str();
  app.add_option("--powersgd-rank", flags.powersgd_rank,
                 "--gradient-compression powersgd: columns of each weight matrix's factors")
      ->check(est_apps::IntegerIn<int64_t>(1, 64))
      ->capture_default_str();
  app.add_option("--powersgd-warmup-steps", flags.powersgd_warmup_steps,
                 "--gradient-compression powersgd: steps all-reduced uncompressed first")
      ->check(est_apps::IntegerIn<int64_t>(0, est_apps::kMaxInt64))
      ->capture_default_str();
  app.add_option("--mixed-precision", flags.mixed_precision,
                 "Autocast model_fn in this dtype, float32 variables (float16: CUDA only, with dynamic loss scaling)")
      ->check(CLI::IsMember({"none", "bfloat16", "float16"}))
      ->capture_default_str();
  app.add_option("--channels-last", flags.channels_last,
                 "Lay out 4-D parameters and images channels-last (NHWC) on the devices (auto: on CUDA devices)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_option("--kernels", flags.kernels,
                 "CPU kernels of kernels/ in LibTorch's place. ops (the default where they are built): for any model, "
                 "LibTorch's slow CPU kernels replaced (RunConfig::replace_slow_cpu_ops: max-pooling to LibTorch's "
                 "bits, matrix products on oneDNN's brgemm kernel on AVX-512 CPUs, within float32 rounding), Adam "
                 "stepped in one pass (fused_optimizer_step, to LibTorch's bits) and the CNN's forward run as a traced "
                 "graph with its convolution, relu and max-pool fused (est::kernels::FusedForward, to LibTorch's "
                 "bits); model: the CNN's layers on "
                 "kernels fitted to it (within float32 rounding of LibTorch's); off: LibTorch's own kernels and "
                 "Adam::step. The parameters and checkpoints are the same")
      ->check(CLI::IsMember({"off", "ops", "model"}))
      ->capture_default_str();
  app.footer(
      "SIGTERM, SIGINT or SIGHUP (preemption, Ctrl-C, a launcher that died) during training: every worker stops\n"
      "after the same step, the chief saves a checkpoint, and the next start resumes from it; a second SIGTERM or\n"
      "SIGINT ends the process at once.\n\n"
      "Exit status: 0 when done; 1 for an error (named on stderr); 2 for bad flags; 70 for an internal error;\n"
      "128+N when stopped by signal N after the checkpoint was saved (143 for SIGTERM, 130 for SIGINT, 129 for\n"
      "SIGHUP).");
  app.add_flag("--ignore-invalid-checkpoints", flags.ignore_invalid_checkpoints,
               "When every checkpoint in --model-dir fails its checks, start from scratch and let new checkpoints\n"
               "replace them (by default that stops with an error listing them)");
  app.add_option("--start-delay-secs", flags.start_delay_secs,
                 "Evaluator task: seconds to wait before the first evaluation")
      ->check(est_apps::NumberIn(0, est_apps::kMaxSeconds, "a number of seconds"))
      ->capture_default_str();
  app.add_option("--chief-address", flags.chief_address,
                 "multi_worker: HOST:PORT of the chief (rank 0), where the others meet it, for ranks that torchrun, "
                 "mpirun or srun give (default: MASTER_ADDR, else the first host of Slurm's node list; and MASTER_PORT, "
                 "else 15000 + the last four digits of SLURM_JOB_ID inside a Slurm job, else 29500)");
  app.add_flag("--evaluator", flags.evaluator,
               "Run as the evaluator task: evaluate each new checkpoint in --model-dir until --max-steps, outside\n"
               "the training group whatever ranks the launcher gives (an evaluator step of a Slurm job)");
  app.add_option("--job-token-file", flags.job_token_file,
                 "multi_worker, parameter_server: file holding the job's shared secret, which every call to the "
                 "chief's store or a ps task carries (default: EST_JOB_TOKEN; est-launch sets a random one)")
      ->check(CLI::ExistingFile);
  est_apps::AddTlsFlags(app, flags.tls);
}

// The job's token from --job-token-file (its first line); "" when the flag is not given,
// which leaves EST_JOB_TOKEN to the strategy.
std::string ReadJobToken(const std::string& path) {
  if (path.empty()) return "";
  std::string token = est::ReadFile(path);
  token = token.substr(0, token.find_first_of("\r\n"));
  EST_CHECK(!token.empty(), est::ConfigError, "--job-token-file '", path, "' holds no token on its first line");
  return token;
}

// The devices of --devices; none when the flag is not given.
std::vector<std::string> SplitDevices(const std::string& list) {
  std::vector<std::string> devices;
  std::stringstream stream(list);
  std::string device;
  while (std::getline(stream, device, ','))
    if (!device.empty()) devices.push_back(device);
  return devices;
}

// The one device of a task without --devices: its local rank's GPU, or the CPU.
std::string OneDeviceOf(const std::vector<std::string>& devices, const est::distribute::ClusterConfig& cluster,
                        const std::string& strategy) {
  if (!devices.empty()) {
    EST_CHECK(devices.size() == 1, est::ConfigError, "--strategy ", strategy, " trains one replica per process; "
              "--devices names ", devices.size());
    return devices[0];
  }
  const int gpus = est::distribute::CudaDeviceCount();
  const std::string device = est::distribute::DeviceOfLocalRank(cluster.local_rank, gpus);
  est::Log().info("--devices not given: {} (local rank {}, {} GPUs on this host)", device, cluster.local_rank, gpus);
  return device;
}

// TLS of the --tls-* flags, when any is given.
std::optional<est::net::TlsOptions> TlsOf(const Flags& flags) {
  if (!flags.tls.any()) return std::nullopt;
  return est::net::TlsOptions{flags.tls.ca_file, flags.tls.cert_file, flags.tls.key_file,
                                       flags.tls.require_client_cert};
}

// The strategy of --strategy; a cluster in the environment needs multi_worker or parameter_server. The
// strategy takes the cluster from RunConfig (Strategy::configure), as a library user's does.
std::shared_ptr<est::distribute::Strategy> MakeStrategy(const Flags& flags, const est::distribute::ClusterConfig& cluster) {
  EST_CHECK(cluster.is_local() || flags.strategy == "multi_worker" || flags.strategy == "parameter_server",
            est::ConfigError, cluster.source, " describes a cluster (task ", cluster.job(), " ", cluster.task_id,
            "); train it with --strategy multi_worker (or parameter_server, with a ps job)");
  EST_CHECK(flags.gradient_compression == "none" || flags.strategy == "multi_worker", est::ConfigError,
            "--gradient-compression ", flags.gradient_compression, " compresses the all-reduce between workers: it "
            "needs --strategy multi_worker, not ", flags.strategy);
  EST_CHECK(flags.communication == "auto" || flags.strategy == "multi_worker", est::ConfigError,
            "--communication ", flags.communication, " chooses the all-reduce between workers: it needs "
            "--strategy multi_worker, not ", flags.strategy);
  EST_CHECK(flags.gradient_overlap == "auto" || flags.strategy == "multi_worker", est::ConfigError,
            "--gradient-overlap ", flags.gradient_overlap, " times the all-reduce between workers: it needs "
            "--strategy multi_worker, not ", flags.strategy);
  EST_CHECK(!flags.powersgd_options_given || flags.gradient_compression == "powersgd", est::ConfigError,
            "--powersgd-rank and --powersgd-warmup-steps apply to --gradient-compression powersgd, not ",
            flags.gradient_compression);
  const std::vector<std::string> devices = SplitDevices(flags.devices);
  if (flags.strategy == "parameter_server") {
    auto options = est::distribute::ParameterServerOptions()
                       .mode(est::distribute::ParseParameterServerMode(flags.ps_mode))
                       .staleness(flags.staleness)
                       .replicas_to_aggregate(flags.replicas_to_aggregate)
                       .device(OneDeviceOf(devices, cluster, flags.strategy))
                       .timeout_secs(flags.timeout_secs)
                       .job_token(ReadJobToken(flags.job_token_file));
    options.tls(TlsOf(flags));
    return est::distribute::ParameterServerStrategy::Create(options);
  }
  if (flags.strategy == "one_device")
    return est::distribute::OneDeviceStrategy::Create(OneDeviceOf(devices, cluster, flags.strategy));
  if (flags.strategy == "mirrored") return est::distribute::MirroredStrategy::Create(devices);
  if (flags.strategy != "multi_worker") return nullptr;
  auto options =
      est::distribute::MultiWorkerOptions()
          .communication(flags.communication)
          .devices(devices)
          .timeout_secs(flags.timeout_secs)
          .beat_lease_secs(flags.beat_lease_secs)
          .job_token(ReadJobToken(flags.job_token_file))
          .buckets(est::distribute::GradientReducerOptions()
                       .bucket_cap_bytes(static_cast<int64_t>(flags.bucket_cap_mb * (1 << 20)))
                       .overlap(est::distribute::ParseBackwardOverlap(flags.gradient_overlap, "--gradient-overlap"))
                       .compression(est::distribute::ParseGradientCompression(flags.gradient_compression,
                                                                              "--gradient-compression"))
                       .power_sgd(est::distribute::PowerSgdOptions()
                                      .rank(flags.powersgd_rank)
                                      .warmup_steps(flags.powersgd_warmup_steps)));
  options.tls(TlsOf(flags));
  return est::distribute::MultiWorkerMirroredStrategy::Create(options);
}

// Fails early, with one line, on a model_dir that cannot hold checkpoints (on the task
// that writes them).
void CheckWritableModelDir(const std::string& model_dir) {
  est::CreateDirectories(model_dir);
  est::AtomicFileWriter probe((std::filesystem::path(model_dir) / ".est-train-probe").string());
  probe.append("ok");
}

// Fails before training, with one line, on a data directory that is missing, is a file, or
// lacks a split: a missing t10k would otherwise show at the first evaluation, hours later.
void CheckDataDir(const std::string& data_dir) {
  std::error_code error;
  const auto status = std::filesystem::status(data_dir, error);
  EST_CHECK(std::filesystem::exists(status), est::DataError, "data directory '", data_dir,
            "' does not exist; install dataset-fashion-mnist or pass --data-dir");
  EST_CHECK(std::filesystem::is_directory(status), est::DataError, "--data-dir '", data_dir, "' is ",
            std::filesystem::is_regular_file(status) ? "a file" : "not a directory",
            "; expected the directory of the Fashion-MNIST IDX files");
  for (const char* split : {"train", "t10k"}) est::data::CheckMnistFiles(data_dir, split);
}

// The input of --data-format and its flags; `reads_data` (not a ps task) checks the files now.
est_train::FashionMnistInput FashionMnistInputOf(const Flags& flags, bool reads_data) {
  est_train::FashionMnistInput input;
  input.data_dir = flags.data_dir;
  const auto given = [&](const char* name) { return flags.data_flags_given.count(name) > 0; };
  if (flags.data_format == "idx") {
    EST_CHECK(flags.data_files.empty() && flags.eval_data_files.empty(), est::ConfigError,
              "--data-files and --eval-data-files need --data-format tfrecord");
    EST_CHECK(!given("--data-compression"), est::ConfigError,
              "--data-compression applies to --data-format tfrecord; IDX files (--data-format idx) are read as they are");
    if (reads_data) CheckDataDir(flags.data_dir);
    return input;
  }
  EST_CHECK(!flags.data_files.empty() && !flags.eval_data_files.empty(), est::ConfigError,
            "--data-format tfrecord needs --data-files and --eval-data-files (globs of TFRecord shards)");
  EST_CHECK(!given("--data-dir"), est::ConfigError,
            "--data-dir applies to --data-format idx; --data-format tfrecord reads --data-files and --eval-data-files");
  input.compression = est::data::ParseTFRecordCompression(flags.data_compression);
  if (!reads_data) return input;  // a ps task builds no input pipeline
  input.train_files = est::data::ListFiles(flags.data_files, /*shuffle=*/false);
  input.eval_files = est::data::ListFiles(flags.eval_data_files, /*shuffle=*/false);
  return input;
}

// The canned estimator of --spec. Its optimizers and learning rates are the spec's, and its input
// the spec's files; its exports take tf.Example records (est-serve --model canned --spec).
est_train::ModelRecipe CannedRecipeOf(const Flags& flags, bool reads_data) {
  EST_CHECK(!flags.spec.empty(), est::ConfigError,
            "--model canned needs --spec, the JSON file of the estimator, its columns and its input (docs/canned.md)");
  if (!flags.data_flags_given.empty())
    throw est::ConfigError(est::Concat(*flags.data_flags_given.begin(), " does not apply to --model canned: its "
                                       "input is the spec's \"train\" and \"eval\" files (", flags.spec, ")"));
  for (const std::string& name : flags.canned_flags_given) {
    if (name != "--batch-size")
      throw est::ConfigError(est::Concat(name, " does not apply to --model canned: the spec's optimizers "
                                         "(\"optimizer\", \"linear_optimizer\", \"dnn_optimizer\", each with its "
                                         "learning_rate) make its training steps (", flags.spec, ")"));
  }
  const est_train::CannedSpec spec = est_train::ReadCannedSpec(flags.spec, reads_data);
  EST_CHECK(!spec.train.batch_size || flags.canned_flags_given.count("--batch-size") == 0, est::ConfigError,
            "--batch-size ", flags.batch_size, " and the spec's train.batch_size ", spec.train.batch_size.value_or(0),
            " both give the batch size; give it in one place (", flags.spec, ")");
  const int64_t train_batch_size = spec.train.batch_size.value_or(flags.batch_size);
  return est_train::CannedModel(spec, train_batch_size, spec.eval.batch_size.value_or(train_batch_size), flags.seed);
}

// The schedule and clipping of --lr-schedule, --warmup-steps and --clip-norm. The schedule is
// read at its first and last steps, and at 1000 between, before training starts: a rate that is
// not a learning rate there (NaN, infinite, overflowing) is a ConfigError now, not at that step.
est_train::TrainingOptions TrainingOptionsOf(const Flags& flags, const est_train::ModelRecipe& recipe) {
  est_train::TrainingOptions options;
  const double initial = flags.learning_rate > 0 ? flags.learning_rate : recipe.default_learning_rate;
  if (!flags.lr_schedule.empty()) {
    EST_CHECK(flags.learning_rate == 0 || est::schedules::ScheduleTakesInitialRate(flags.lr_schedule),
              est::ConfigError, "--learning-rate ", flags.learning_rate, " would not be used: --lr-schedule '",
              flags.lr_schedule, "' gives its own starting rate; give the rate in one of the two");
    options.learning_rate = est::schedules::ParseLearningRateSchedule(flags.lr_schedule, initial);
  }
  if (flags.warmup_steps > 0)
    options.learning_rate = est::schedules::LinearWarmup(
        options.learning_rate.value_or(est::schedules::Constant(initial)), flags.warmup_steps);
  if (options.learning_rate) {
    constexpr int64_t kSamples = 1000;
    for (int64_t i = 0; i < kSamples; ++i)
      (*options.learning_rate)(static_cast<int64_t>(static_cast<double>(flags.max_steps) * i / kSamples));
    (*options.learning_rate)(flags.max_steps);
  }
  if (flags.clip_norm > 0) options.clip_norm = flags.clip_norm;
  return options;
}

// The exporters of --export, each into model_dir/export/<kind>, under the model's name.
std::vector<est::ExporterPtr> ExportersOf(const Flags& flags, const est_train::ModelRecipe& recipe) {
  EST_CHECK(flags.exports.empty() || recipe.serving_input, est::ConfigError, "--export: --model ", flags.model,
            " has no serving input (a canned baseline reads no feature, so requests would say nothing)");
  const est::ExporterOptions options = est::ExporterOptions(recipe.serving_input)
                                           .model({flags.model, est_train::kModelVersion})
                                           .weights_only(recipe.export_weights_only)
                                           .class_labels(recipe.class_labels)
                                           .assets(recipe.export_assets)
                                           .exports_to_keep(flags.exports_to_keep);
  std::vector<est::ExporterPtr> exporters;
  for (const std::string& kind : std::set<std::string>(flags.exports.begin(), flags.exports.end())) {
    if (kind == "latest") exporters.push_back(est::LatestExporter(kind, options));
    if (kind == "final") exporters.push_back(est::FinalExporter(kind, options));
    if (kind != "best") continue;
    if (flags.keep_best_by.empty()) {
      exporters.push_back(est::BestExporter(kind, options));
      continue;
    }
    const est::KeepBestCheckpoints by = est::ParseKeepBestBy(flags.keep_best_by);
    exporters.push_back(est::BestExporter(kind, options, [by](const est::EvalResult& best, const est::EvalResult& current) {
      return by.higher_is_better() ? current.at(by.metric()) > best.at(by.metric())
                                   : current.at(by.metric()) < best.at(by.metric());
    }));
  }
  return exporters;
}

int Run(const Flags& flags) {
  // Before any thread of a strategy or a store starts: under a ulimit -v too small to train,
  // OpenBLAS would spin for ever at the first matrix product.
  est::CheckAddressSpaceForTraining();
  const bool kernels = flags.kernels != "off";
  const est_apps::CnnLayers cnn_layers = flags.kernels == "model" ? est_apps::CnnLayers::kKernels
                                         : flags.kernels == "ops"  ? est_apps::CnnLayers::kFused
                                                                   : est_apps::CnnLayers::kLibTorch;
  est_apps::CheckKernelsBuilt(kernels, ("--kernels " + flags.kernels).c_str());
  // TF_CONFIG, or torchrun's, MPI's or Slurm's variables, as --chief-address and --evaluator amend them.
  est::RunConfig config(est_train::ResolveClusterOfFlags(flags.chief_address, flags.evaluator));
  if (config.cluster.is_local() || config.cluster.is_chief) CheckWritableModelDir(flags.model_dir);
  est_train::ModelRecipe recipe;
  nlohmann::json params = nlohmann::json::object();
  if (flags.learning_rate > 0) params["learning_rate"] = flags.learning_rate;
  EST_CHECK(flags.spec.empty() || flags.model == "canned", est::ConfigError,
            "--spec applies to --model canned, not --model ", flags.model);
  if (flags.model == "canned") {
    recipe = CannedRecipeOf(flags, !config.cluster.is_ps());
  } else if (flags.model == "linear") {
    EST_CHECK(flags.data_flags_given.empty(), est::ConfigError, *flags.data_flags_given.begin(),
              " applies to --model fashion_mnist_cnn; --model linear makes its own data");
    recipe = est_train::Linear(flags.batch_size);
  } else if (flags.model == "transformer_lm") {
    for (const char* name : {"--data-format", "--data-files", "--eval-data-files", "--data-compression"})
      EST_CHECK(flags.data_flags_given.count(name) == 0, est::ConfigError, name,
                " applies to --model fashion_mnist_cnn; --model transformer_lm reads the text files of --data-dir");
    const bool own_dir = flags.data_flags_given.count("--data-dir") > 0;
    recipe = est_train::TransformerLanguageModel(own_dir ? flags.data_dir : kFortunesDir, !config.cluster.is_ps(),
                                                 flags.batch_size, flags.seed, flags.max_steps);
  } else {
    recipe = est_train::FashionMnistCnn(FashionMnistInputOf(flags, !config.cluster.is_ps()),
                                        flags.batch_size, flags.seed, cnn_layers);
  }

  if (recipe.model_fn)
    recipe.model_fn = est_train::WithTrainingOptions(std::move(recipe.model_fn), TrainingOptionsOf(flags, recipe));
  // Before any step: a metric the model's evaluation does not report would be found missing
  // only at the first checkpoint.
  std::vector<std::pair<const char*, std::string>> named_metrics;
  if (!flags.keep_best_by.empty())
    named_metrics.emplace_back("--keep-best-by", est::ParseKeepBestBy(flags.keep_best_by).metric());
  if (!flags.early_stopping.empty())
    named_metrics.emplace_back("--early-stopping", ParseEarlyStopping(flags.early_stopping).metric.metric());
  for (const auto& [flag, metric] : named_metrics) {
    std::string reported = "loss";
    for (const std::string& name : recipe.metrics) reported += ", " + name;
    EST_CHECK(metric == "loss" || std::count(recipe.metrics.begin(), recipe.metrics.end(), metric) > 0,
              est::ConfigError, flag, " names metric '", metric, "', which --model ", flags.model,
              " does not report; its evaluation reports ", reported);
  }
  config.train_distribute = MakeStrategy(flags, config.cluster);
  config.tf_random_seed = flags.seed;
  config.save_checkpoints_steps = flags.save_checkpoints_steps;
  config.log_step_count_steps = flags.log_step_count_steps;
  config.gradient_accumulation_steps = flags.gradient_accumulation_steps;
  config.logical_input_shards = flags.logical_input_shards;
  config.mixed_precision = est::ParseMixedPrecision(flags.mixed_precision);
  config.channels_last = est::ParseChannelsLast(flags.channels_last);
  config.ignore_invalid_checkpoints = flags.ignore_invalid_checkpoints;
  config.fused_optimizer_step = kernels;
  config.replace_slow_cpu_ops = kernels;
  if (flags.ema_decay > 0) config.moving_average = est::MovingAverageOptions().decay(flags.ema_decay).num_updates(true);
  if (!flags.keep_best_by.empty())
    config.keep_best_checkpoints = est::ParseKeepBestBy(flags.keep_best_by).count(flags.keep_best);
  est::TuneProcessForTraining();  // once the flags, the cluster and the data are known good
  const std::shared_ptr<est::Estimator> estimator =
      recipe.make_estimator ? recipe.make_estimator(flags.model_dir, config)
                            : std::make_shared<est::Estimator>(recipe.model_fn, flags.model_dir, config, params);
  auto eval_spec =
      est::EvalSpec(recipe.input_fn).throttle_secs(flags.throttle_secs).start_delay_secs(flags.start_delay_secs);
  eval_spec.steps(flags.eval_steps > 0 ? std::optional<int64_t>(flags.eval_steps) : std::nullopt);
  eval_spec.exporters(ExportersOf(flags, recipe));
  auto train_spec = est::TrainSpec(recipe.input_fn).max_steps(flags.max_steps);
  if (!flags.early_stopping.empty()) {
    const EarlyStopping rule = ParseEarlyStopping(flags.early_stopping);
    est::EarlyStoppingSchedule schedule;
    schedule.run_every_steps = flags.save_checkpoints_steps;  // evaluations follow checkpoints
    const auto hook = rule.metric.higher_is_better() ? est::StopIfNoIncreaseHook : est::StopIfNoDecreaseHook;
    train_spec.hooks({hook(estimator->eval_dir(), rule.metric.metric(), rule.steps_without_improvement, 0, schedule)});
  }
  est::train_and_evaluate(*estimator, train_spec, eval_spec);
  return 0;
}

// What an allocation that failed says: the limit it met, and what takes memory, the batches only
// one of them.
std::string OutOfMemory(const Flags& flags) {
  const std::optional<uint64_t> address_space = est::AddressSpaceLimitBytes();
  return "out of memory: this process needs more than it may use (" +
         (address_space ? "ulimit -v " + std::to_string(*address_space / 1024) + " KiB; " : std::string()) +
         est::DescribeBytes(static_cast<double>(est::MemoryLimitBytes())) +
         " of memory on this machine or in its cgroup). The model, its input data and the batches of --batch-size " +
         std::to_string(flags.batch_size) + " all take some: lower what grew, or allow the process more";
}

constexpr const char* kCannotStartThread =
    "the system refused a new thread (Resource temporarily unavailable): this user's process limit (ulimit -u), "
    "the cgroup's pids.max, or the address-space limit (ulimit -v) is too small for this job";

}  // namespace

// LeakSanitizer (sanitizer builds): allocations of OpenSSL are left out of leak reports, as in
// the test programs (tests/test_main.cc): gRPC leaves the OpenSSL state of a TLS handshake cut
// short allocated at exit, now and then, with no frame of ours (seen once in a parameter-server
// job over mutual TLS in CI). Unused without LeakSanitizer.
extern "C" const char* __lsan_default_suppressions() { return "leak:CRYPTO_zalloc\n"; }

int main(int argc, char** argv) {
  CLI::App app("est-train: train and evaluate a TorchEstimator model (tf.estimator.train_and_evaluate)",
               "est-train");
  Flags flags;
  AddFlags(app, flags);
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "est-train")) return *exit_status;
  flags.powersgd_options_given = app.count("--powersgd-rank") + app.count("--powersgd-warmup-steps") > 0;
  for (const char* name : {"--data-dir", "--data-format", "--data-files", "--eval-data-files", "--data-compression"})
    if (app.count(name) > 0) flags.data_flags_given.insert(name);
  for (const char* name : kCannedFlags)
    if (app.count(name) > 0) flags.canned_flags_given.insert(name);
  // Stop signals are recorded for the whole run, not only inside train(): one that comes
  // while a failure unwinds (est-launch stops every task when one fails) must not cut off
  // the error line. Training and evaluation act on it between steps; a second one ends
  // the process at once.
  est::StopSignalGuard stop_signals;
  // A file size limit (ulimit -f) fails a write with EFBIG, which a save reports as it does a
  // full disk (the temporary file removed, the last checkpoint kept), instead of SIGXFSZ
  // ending the process in the middle of it.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return Run(flags);
  } catch (const est::Interrupted& e) {
    std::fprintf(stderr, "est-train: %s\n", e.what());
    return 128 + e.signal_number();
  } catch (const est::Error& e) {
    std::fprintf(stderr, "est-train: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "est-train: error: %s\n", OutOfMemory(flags).c_str());
    return 1;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("can't allocate memory") != std::string::npos) {
      std::fprintf(stderr, "est-train: error: %s (%s)\n", OutOfMemory(flags).c_str(), est::OneLine(what).c_str());
      return 1;
    }
    std::fprintf(stderr, "est-train: internal error: %s\n", est::OneLine(what).c_str());
    return 70;
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::resource_unavailable_try_again) {
      std::fprintf(stderr, "est-train: error: %s\n", kCannotStartThread);
      return 1;
    }
    std::fprintf(stderr, "est-train: internal error: %s\n", e.what());
    return 70;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "est-train: internal error: %s\n", e.what());
    return 70;
  }
}
