#pragma once
/// The bytes of a `<prefix>.index` file of the format this library wrote before tensor
/// bundles (read, so that older model_dirs restore): a serialized Manifest whose last field,
/// index_crc32c, holds the CRC32C of every byte before it. The file stays a plain protobuf
/// message (protoc --decode reads it), and truncation anywhere is detected.

#include <cstdint>
#include <string>
#include <string_view>

namespace est::checkpoint {

namespace proto {
class Manifest;
}  // namespace proto

/// The manifest format version this build writes and reads.
inline constexpr uint32_t kFormatVersion = 1;

/// Serializes `manifest` (whose index_crc32c is ignored) followed by its checksum field.
std::string EncodeIndex(const proto::Manifest& manifest);

/// Checks the trailing checksum and parses `bytes` into `manifest`; throws
/// CheckpointError naming `index_path` when the bytes are truncated, damaged or not a
/// manifest of a version this build reads.
void DecodeIndex(std::string_view bytes, const std::string& index_path, proto::Manifest& manifest);

}  // namespace est::checkpoint
