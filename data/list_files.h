#pragma once
/// ListFiles: the files a glob pattern names, as tf.data.Dataset.list_files lists them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace est::data {

/// The regular files matching `pattern` (glob(7): `*`, `?` and `[...]` in any path
/// component), sorted by name, or shuffled when `shuffle`: by `seed`, the same order in
/// every process and on every run, or without one from std::random_device. A pattern that
/// matches no file is a DataError naming it. Unlike tf.data's list_files, the list is
/// shuffled once, here, not again at every pass over it.
std::vector<std::string> ListFiles(const std::string& pattern, bool shuffle,
                                   std::optional<uint64_t> seed = std::nullopt);

}  // namespace est::data
