#pragma once
/// Placement: which ps task holds which part of each variable. Every process computes the same
/// plan from the variables' names, shapes and dtypes alone: big variables are cut along
/// dimension 0 (TensorFlow's MinSizePartitioner, or FixedShardsPartitioner), then the shards
/// are spread over the ps tasks greedily by bytes, the biggest first.

#include <c10/core/ScalarType.h>
#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <vector>

namespace est::distribute {

/// What placement knows of a variable.
struct VariableInfo {
  /// Its checkpoint key ("cnn/fc.weight").
  std::string name;
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Float;

  /// Its size in bytes.
  int64_t bytes() const;
};

/// How variables are cut and spread.
struct PlacementOptions {
  /// Number of ps tasks.
  TORCH_ARG(int, num_ps) = 1;
  /// A variable is cut along dimension 0 into bytes / min_shard_bytes shards (rounded down;
  /// at most max_shards, and no more than dimension 0 has rows), so each holds about this
  /// many bytes or more (MinSizePartitioner's min_shard_bytes, 256 KiB).
  TORCH_ARG(int64_t, min_shard_bytes) = 256 << 10;
  /// The most shards one variable is cut into; 0: one per ps task (MinSizePartitioner's
  /// max_shards, set to the ps count as TensorFlow's examples do).
  TORCH_ARG(int, max_shards) = 0;
  /// When positive, every variable of at least 2 × min_shard_bytes is cut into this many
  /// shards instead (FixedShardsPartitioner), fewer where dimension 0 is shorter.
  TORCH_ARG(int, fixed_shards) = 0;
};

/// One part of a variable: rows [row_begin, row_begin + rows) of dimension 0 (the whole
/// variable when it is not cut; a scalar is one shard with rows 1).
struct Shard {
  /// Index of the variable in the list placed.
  int variable = 0;
  /// Index of this part within its variable, from 0.
  int part = 0;
  /// Parts the variable is cut into.
  int parts = 1;
  int64_t row_begin = 0;
  int64_t rows = 1;
  /// Shape of this part.
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  /// The ps task holding it.
  int ps = 0;
};

/// The plan for a list of variables.
class Placement {
 public:
  /// Places `variables`. ConfigError for num_ps < 1, min_shard_bytes < 1, a negative
  /// max_shards or fixed_shards, or two variables of one name.
  Placement(std::vector<VariableInfo> variables, const PlacementOptions& options);

  /// The variables placed, in the order given.
  const std::vector<VariableInfo>& variables() const { return variables_; }
  /// Every shard, by variable then part; a shard's index here is its id on the ps tasks.
  const std::vector<Shard>& shards() const { return shards_; }
  /// The ids of the shards of variable `variable`, in part order.
  std::vector<int> shards_of_variable(int variable) const;
  /// The ids of the shards ps task `ps` holds, in id order.
  std::vector<int> shards_on_ps(int ps) const;
  /// Number of ps tasks.
  int num_ps() const { return num_ps_; }
  /// Bytes held by each ps task.
  std::vector<int64_t> bytes_per_ps() const;
  /// Largest over smallest bytes held by a ps task (1 when balanced; infinity when a ps
  /// task holds nothing).
  double imbalance() const;
  /// A fingerprint of the plan (names, shapes, dtypes, cuts, tasks), equal in every process
  /// that computed the same plan.
  uint64_t fingerprint() const;
  /// "ps 0: 3 shards, 1.2 MB; ps 1: …", for a log line.
  std::string describe() const;

 private:
  std::vector<VariableInfo> variables_;
  std::vector<Shard> shards_;
  int num_ps_ = 1;
};

}  // namespace est::distribute
