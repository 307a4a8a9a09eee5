#include "distribute/parameter_server/placement.h"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "common/error.h"

namespace est::distribute {
namespace {

/// How many parts `variable` is cut into.
int PartsOf(const VariableInfo& variable, const PlacementOptions& options, int max_shards) {
  if (variable.shape.empty() || variable.shape.front() < 2) return 1;
  const int64_t rows = variable.shape.front();
  const int64_t by_size = variable.bytes() / options.min_shard_bytes();
  if (by_size < 2) return 1;
  const int64_t wanted = options.fixed_shards() > 0 ? options.fixed_shards() : std::min<int64_t>(by_size, max_shards);
  return static_cast<int>(std::max<int64_t>(1, std::min(wanted, rows)));
}

/// FNV-1a over `text`.
uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string FormatBytes(int64_t bytes) {
  std::ostringstream out;
  out.precision(3);
  if (bytes >= (1 << 20)) {
    out << static_cast<double>(bytes) / (1 << 20) << " MiB";
  } else if (bytes >= (1 << 10)) {
    out << static_cast<double>(bytes) / (1 << 10) << " KiB";
  } else {
    out << bytes << " B";
  }
  return out.str();
}

}  // namespace

int64_t VariableInfo::bytes() const {
  const int64_t elements = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  return elements * static_cast<int64_t>(c10::elementSize(dtype));
}

Placement::Placement(std::vector<VariableInfo> variables, const PlacementOptions& options)
    : variables_(std::move(variables)), num_ps_(options.num_ps()) {
  EST_CHECK(options.num_ps() >= 1, ConfigError, "parameter-server placement: num_ps is ", options.num_ps(),
            ", expected at least 1 ps task");
  EST_CHECK(options.min_shard_bytes() >= 1, ConfigError, "parameter-server placement: min_shard_bytes is ",
            options.min_shard_bytes(), ", expected at least 1");
  EST_CHECK(options.max_shards() >= 0 && options.fixed_shards() >= 0, ConfigError,
            "parameter-server placement: max_shards ", options.max_shards(), " and fixed_shards ",
            options.fixed_shards(), " must not be negative");
  std::set<std::string> names;
  for (const auto& variable : variables_)
    EST_CHECK(names.insert(variable.name).second, ConfigError, "parameter-server placement: two variables are named '",
              variable.name, "'");
  const int max_shards = options.max_shards() > 0 ? options.max_shards() : num_ps_;

  for (size_t v = 0; v < variables_.size(); ++v) {
    const VariableInfo& variable = variables_[v];
    const int parts = PartsOf(variable, options, max_shards);
    const int64_t rows = variable.shape.empty() ? 1 : variable.shape.front();
    const int64_t row_bytes = rows == 0 ? 0 : variable.bytes() / rows;
    int64_t row_begin = 0;
    for (int part = 0; part < parts; ++part) {
      Shard shard;
      shard.variable = static_cast<int>(v);
      shard.part = part;
      shard.parts = parts;
      shard.row_begin = row_begin;
      // As TensorFlow slices: the first rows % parts shards get one row more.
      shard.rows = parts == 1 ? rows : rows / parts + (part < rows % parts ? 1 : 0);
      shard.shape = variable.shape;
      if (!shard.shape.empty()) shard.shape.front() = shard.rows;
      shard.bytes = parts == 1 ? variable.bytes() : shard.rows * row_bytes;
      row_begin += shard.rows;
      shards_.push_back(std::move(shard));
    }
  }

  // Greedy: the biggest shard first (ties by variable, then part) to the ps task holding the
  // fewest bytes so far (ties to the lowest index).
  std::vector<int> order(shards_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return shards_[a].bytes > shards_[b].bytes; });
  std::vector<int64_t> held(static_cast<size_t>(num_ps_), 0);
  for (int id : order) {
    const auto lightest = std::min_element(held.begin(), held.end());
    shards_[static_cast<size_t>(id)].ps = static_cast<int>(lightest - held.begin());
    *lightest += shards_[static_cast<size_t>(id)].bytes;
  }
}

std::vector<int> Placement::shards_of_variable(int variable) const {
  std::vector<int> ids;
  for (size_t id = 0; id < shards_.size(); ++id)
    if (shards_[id].variable == variable) ids.push_back(static_cast<int>(id));
  return ids;
}

std::vector<int> Placement::shards_on_ps(int ps) const {
  std::vector<int> ids;
  for (size_t id = 0; id < shards_.size(); ++id)
    if (shards_[id].ps == ps) ids.push_back(static_cast<int>(id));
  return ids;
}

std::vector<int64_t> Placement::bytes_per_ps() const {
  std::vector<int64_t> bytes(static_cast<size_t>(num_ps_), 0);
  for (const Shard& shard : shards_) bytes[static_cast<size_t>(shard.ps)] += shard.bytes;
  return bytes;
}

double Placement::imbalance() const {
  const std::vector<int64_t> bytes = bytes_per_ps();
  const auto [least, most] = std::minmax_element(bytes.begin(), bytes.end());
  if (*most == 0) return 1.0;
  if (*least == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(*most) / static_cast<double>(*least);
}

uint64_t Placement::fingerprint() const {
  std::ostringstream text;
  text << num_ps_ << ';';
  for (const Shard& shard : shards_) {
    const VariableInfo& variable = variables_[static_cast<size_t>(shard.variable)];
    text << variable.name << '|' << c10::toString(variable.dtype) << '|';
    for (int64_t size : variable.shape) text << size << ',';
    text << '|' << shard.part << '/' << shard.parts << '@' << shard.row_begin << '+' << shard.rows << '>' << shard.ps
         << ';';
  }
  return Fnv1a(text.str());
}

std::string Placement::describe() const {
  std::ostringstream out;
  const std::vector<int64_t> bytes = bytes_per_ps();
  for (int ps = 0; ps < num_ps_; ++ps) {
    if (ps > 0) out << "; ";
    out << "ps " << ps << ": " << shards_on_ps(ps).size() << " shards, " << FormatBytes(bytes[static_cast<size_t>(ps)]);
  }
  return out.str();
}

}  // namespace est::distribute
