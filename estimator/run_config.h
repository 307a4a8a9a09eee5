#pragma once
/// RunConfig: how an Estimator runs (tf.estimator.RunConfig), with TensorFlow's defaults.

#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "distribute/cluster/cluster_config.h"
#include "distribute/cluster/cluster_resolver.h"
#include "estimator/channels_last.h"
#include "estimator/mixed_precision.h"
#include "estimator/keep_best_checkpoints.h"
#include "estimator/moving_average.h"

namespace est {

/// The most logical input shards a training may read (RunConfig::logical_input_shards).
inline constexpr int kMaxLogicalInputShards = 1 << 16;

namespace distribute {
class Strategy;
}

/// Fields and defaults of tf.estimator.RunConfig. Like TensorFlow's, a RunConfig reads
/// the cluster from the environment when it is made (TF_CONFIG, else torchrun's or
/// Slurm's variables) and throws ConfigError quoting what is malformed there.
/// validate() (called by the Estimator) throws ConfigError naming the field and the value
/// that is wrong.
struct RunConfig {
  /// Reads the cluster from the environment (ResolveCluster).
  RunConfig() = default;
  /// Takes `cluster` as it is: a program that resolves it itself (est-train's --chief-address,
  /// --evaluator) reads the environment no further.
  explicit RunConfig(distribute::ClusterConfig cluster) : cluster(std::move(cluster)) {}

  /// The cluster and this task's place in it; local (no cluster) when nothing is set.
  distribute::ClusterConfig cluster = distribute::ResolveCluster();
  /// Where checkpoints and summaries go; the Estimator's model_dir argument wins when set.
  std::string model_dir;
  /// Seeds LibTorch's generators before the model is built, for reproducible runs.
  std::optional<uint64_t> tf_random_seed;
  /// Write summaries every this many steps (0 disables summaries).
  int64_t save_summary_steps = 100;
  /// Save a checkpoint every this many steps. Exclusive with save_checkpoints_secs.
  std::optional<int64_t> save_checkpoints_steps;
  /// Save a checkpoint every this many seconds; 600 when neither interval is set.
  std::optional<double> save_checkpoints_secs;
  /// Checkpoints to keep (0 keeps all).
  int keep_checkpoint_max = 5;
  /// Additionally keep one checkpoint every this many hours.
  double keep_checkpoint_every_n_hours = 10000;
  /// When set, the best evaluated checkpoints by a metric are kept too, beside the newest
  /// keep_checkpoint_max, and survive restarts (KeepBestCheckpoints).
  std::optional<KeepBestCheckpoints> keep_best_checkpoints;
  /// Log loss and global_step/sec every this many steps.
  int64_t log_step_count_steps = 100;
  /// Micro-batches per training step: each replica runs forward and backward on this many
  /// batches, summing gradients locally (no all-reduce), and the optimizer steps once on
  /// their average, synchronized once. A global step consumes this many batches per replica.
  int64_t gradient_accumulation_steps = 1;
  /// The training input as this many logical shards, shared out over workers that step
  /// together with one replica each: input_fn is called for each shard s a worker holds with
  /// InputContext(L, s, L), and worker w of W reads shards w, w + W, … (one batch of each per
  /// micro-batch), so a global step reads one batch of every shard however many workers there
  /// are. Checkpoints record L and the shards' position, so a job restored with another number
  /// of workers continues its input exactly, with the same global batch. 0: the checkpoint's
  /// number, else one shard per worker (each worker reads what it would read without them),
  /// counting the workers a group may grow to (MultiWorkerOptions::max_workers); parameter
  /// servers' workers and several replicas per worker read one pipeline each.
  int logical_input_shards = 0;
  /// Mixed precision: model_fn runs under autocast in this dtype in every mode, on every
  /// replica's device; variables, optimizer state and checkpoints stay in their own dtype
  /// (float32 master weights). float16 needs CUDA devices.
  MixedPrecision mixed_precision = MixedPrecision::kNone;
  /// Dynamic loss scaling of training; when unset, float16 mixed precision uses the
  /// defaults and other precisions none. Its state (the scale and the good steps) is saved
  /// in checkpoints and restored with them.
  std::optional<LossScaleOptions> loss_scale;
  /// Exponential moving averages of every trainable variable (tf.train.ExponentialMovingAverage):
  /// kept by the chief after every training step, checkpointed as
  /// "<variable>/ExponentialMovingAverage", and used instead of the variables by evaluation
  /// and prediction (a checkpoint without them evaluates its variables). Unset: none.
  std::optional<MovingAverageOptions> moving_average;
  /// Which weights evaluation, prediction and export read: the moving averages or the
  /// variables; by default as moving_average says. The choice is logged with the checkpoint.
  InferenceWeights inference_weights = InferenceWeights::kAuto;
  /// When model_dir holds checkpoints and none of them verifies (CRC, sizes), train from
  /// scratch and let new checkpoints replace them, and evaluate or predict from the model's
  /// initial values, instead of stopping with a CheckpointError that lists them (TensorFlow
  /// raises DataLossError there).
  bool ignore_invalid_checkpoints = false;
  /// Steps a torch::optim::Adam or AdamW that model_fn returns in one fused pass over each
  /// float32 CPU parameter instead of LibTorch's eight (est::kernels::FusedAdamStep, where the
  /// kernels are built: EST_WITH_KERNELS): the same results to the bit, checked once against
  /// LibTorch's own step. false calls step(). The chief's setting holds on its ps tasks too.
  bool fused_optimizer_step = true;
  /// Puts kernels of our own in the place of LibTorch's CPU kernels of ops that LibTorch computes
  /// slowly (est::kernels::ReplaceSlowCpuOps, where the kernels are built: EST_WITH_KERNELS), for
  /// the whole process from the Estimator's construction on, for every shape, in this model and
  /// in any other code of the process. Max-pooling (torch::max_pool2d, torch::nn::MaxPool2d) on
  /// contiguous float32 images, to LibTorch's bits: its forward about 10 × faster than LibTorch
  /// 1.13's, each window's winner kept as a byte instead of a 64-bit index, and, where its input
  /// is relu's output, relu's backward folded into the pooling's. Where oneDNN's matmul is its
  /// brgemm kernel on this CPU (AVX-512), dense float32 matrix products (linear layers, forward
  /// and backward) on it, within float32 rounding of LibTorch's (OpenBLAS sums in another
  /// order), 8 to 25 % faster than OpenBLAS's (docs/performance.md).
  /// false leaves LibTorch's kernels; a build without the kernels logs
  /// that it has none to put there.
  bool replace_slow_cpu_ops = false;
  /// Channels-last (NHWC) memory format for each replica's 4-D parameters and buffers and
  /// the 4-D floating tensors of its batches (images): kAuto uses it on CUDA replicas, whose
  /// cuDNN kernels prefer it, and not on the CPU, where it measured no faster
  /// (docs/performance.md). Checkpoints do not change: they hold the same tensors, contiguous.
  ChannelsLast channels_last = ChannelsLast::kAuto;
  /// Catch SIGTERM, SIGINT and SIGHUP during train(): every worker stops after the step in
  /// which any of them got one, the chief saves a checkpoint, and train() throws
  /// est::Interrupted (programs exit with 128 + the signal). The evaluator task of
  /// train_and_evaluate stops the same way between evaluations. A second SIGTERM or SIGINT
  /// ends the process at once.
  bool stop_on_signals = true;
  /// During train(), this signal makes every collective of the process log its flight
  /// recorder (its last calls, and the one it is inside, with how long each took), from a
  /// thread of its own, so a hung job says where it hangs; est-launch forwards it to its tasks.
  /// Taken only while it has its default action: a handler of the program's own stays. 0: none.
  /// SIGUSR1, SIGUSR2, SIGQUIT, or SIGRTMIN to SIGRTMAX.
  int flight_recorder_signal = SIGUSR1;
  /// How training is distributed; one replica on the CPU when null.
  std::shared_ptr<distribute::Strategy> train_distribute;
  /// How evaluation and prediction are distributed. When null they are not, as in TensorFlow:
  /// the calling process evaluates alone, on the first device of train_distribute (every
  /// worker that calls evaluate() evaluates the whole input). Set it to train_distribute's
  /// strategy for the workers to evaluate together, each on its shard, every one calling evaluate().
  std::shared_ptr<distribute::Strategy> eval_distribute;

  /// Throws ConfigError for an invalid field.
  void validate() const;
  /// The checkpoint interval in seconds after TensorFlow's defaulting rule, or nullopt
  /// when checkpoints are saved by steps.
  std::optional<double> effective_save_checkpoints_secs() const;
  /// The loss scaling of training: loss_scale, else the defaults for float16, else none.
  std::optional<LossScaleOptions> effective_loss_scale() const;
};

}  // namespace est
