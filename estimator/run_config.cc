#include "estimator/run_config.h"

#include <cmath>

#include "common/error.h"

namespace est {

void RunConfig::validate() const {
  EST_CHECK(flight_recorder_signal == 0 || flight_recorder_signal == SIGUSR1 || flight_recorder_signal == SIGUSR2 ||
                flight_recorder_signal == SIGQUIT ||
                (flight_recorder_signal >= SIGRTMIN && flight_recorder_signal <= SIGRTMAX),
            ConfigError, "RunConfig: flight_recorder_signal must be 0 (none), SIGUSR1 (", SIGUSR1, "), SIGUSR2 (",
            SIGUSR2, "), SIGQUIT (", SIGQUIT, ") or in [SIGRTMIN, SIGRTMAX] ([", SIGRTMIN, ", ", SIGRTMAX, "]), got ",
            flight_recorder_signal);
  EST_CHECK(!(save_checkpoints_steps && save_checkpoints_secs), ConfigError,
            "RunConfig: save_checkpoints_steps (", save_checkpoints_steps.value_or(0),
            ") and save_checkpoints_secs (", save_checkpoints_secs.value_or(0),
            ") are both set; set at most one of them");
  EST_CHECK(!save_checkpoints_steps || *save_checkpoints_steps > 0, ConfigError,
            "RunConfig: save_checkpoints_steps must be positive, got ", save_checkpoints_steps.value_or(0));
  EST_CHECK(!save_checkpoints_secs || (*save_checkpoints_secs > 0 && std::isfinite(*save_checkpoints_secs)),
            ConfigError, "RunConfig: save_checkpoints_secs must be positive, got ",
            save_checkpoints_secs.value_or(0));
  EST_CHECK(save_summary_steps >= 0, ConfigError, "RunConfig: save_summary_steps must be >= 0, got ",
            save_summary_steps);
  EST_CHECK(keep_checkpoint_max >= 0, ConfigError, "RunConfig: keep_checkpoint_max must be >= 0, got ",
            keep_checkpoint_max);
  EST_CHECK(keep_checkpoint_every_n_hours > 0, ConfigError,
            "RunConfig: keep_checkpoint_every_n_hours must be positive, got ", keep_checkpoint_every_n_hours);
  EST_CHECK(log_step_count_steps > 0, ConfigError, "RunConfig: log_step_count_steps must be positive, got ",
            log_step_count_steps);
  EST_CHECK(gradient_accumulation_steps > 0, ConfigError,
            "RunConfig: gradient_accumulation_steps must be positive, got ", gradient_accumulation_steps);
  EST_CHECK(logical_input_shards >= 0 && logical_input_shards <= kMaxLogicalInputShards, ConfigError,
            "RunConfig: logical_input_shards must be in [0, ", kMaxLogicalInputShards, "], got ", logical_input_shards);
  if (loss_scale) loss_scale->validate();
  if (moving_average) moving_average->validate();
  if (keep_best_checkpoints) keep_best_checkpoints->validate();
}

std::optional<double> RunConfig::effective_save_checkpoints_secs() const {
  if (save_checkpoints_steps) return std::nullopt;
  return save_checkpoints_secs.value_or(600.0);
}

std::optional<LossScaleOptions> RunConfig::effective_loss_scale() const {
  if (loss_scale) return loss_scale;
  if (mixed_precision == MixedPrecision::kFloat16) return LossScaleOptions();
  return std::nullopt;
}

}  // namespace est
