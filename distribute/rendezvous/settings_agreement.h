#pragma once
/// SettingsAgreement: every worker of a job checks, right after the rendezvous, that the
/// others run with the same strategy settings (local devices, communication, gradient
/// buckets, buffer sync); a worker that differs would otherwise train with mismatched
/// buckets or replicas. Internal to the strategies.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace est::distribute {

class Store;

/// A worker's settings, in an order every worker uses: (name, value) pairs.
using StrategySettings = std::vector<std::pair<std::string, std::string>>;

/// Publishes rank `rank`'s `settings` in `store` (the job's rendezvous view), reads every
/// other rank's within `timeout`, and throws ConfigError naming each setting that differs,
/// with the workers holding each value ("the strategies of the workers differ: local
/// devices is 2 on workers 0, 2 and 1 on worker 1; …"). Every rank throws the same error.
void CheckSameSettings(Store& store, int rank, int world_size, const StrategySettings& settings,
                       std::chrono::milliseconds timeout);

/// Publishes `settings` in `store` as those of a training group already formed (its chief
/// does), for workers that join it later (CheckGroupSettings).
void PublishGroupSettings(Store& store, const StrategySettings& settings);

/// A worker joining a training group: reads the group's settings (PublishGroupSettings) within
/// `timeout` and throws ConfigError naming each of `settings` that differs ("communication is
/// ring in the group and nccl on this worker; …").
void CheckGroupSettings(Store& store, const StrategySettings& settings, std::chrono::milliseconds timeout);

}  // namespace est::distribute
