#pragma once
/// TFRecord framing, the container format of TensorFlow event files and of TFRecord
/// datasets. Each record is
///   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes |
///   data[length] | uint32 masked CRC32C of the data.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace est::tfrecord {

/// Bytes before a record's data: the length and its checksum.
inline constexpr size_t kHeaderSize = 12;
/// Bytes after a record's data: the data's checksum.
inline constexpr size_t kFooterSize = 4;

/// Returns `data` framed as one TFRecord.
std::string FrameRecord(std::string_view data);

/// The data length that the kHeaderSize bytes at `header` announce, believed or not.
uint64_t HeaderLength(const char* header);
/// Whether the length in the kHeaderSize bytes at `header` matches its checksum.
bool HeaderChecksumMatches(const char* header);
/// Whether the kFooterSize bytes at `footer` hold the checksum of `data`.
bool DataChecksumMatches(std::string_view data, const char* footer);

/// Returns the data length that the kHeaderSize bytes at `header` announce; throws DataError
/// naming `source` and the record's `offset` when the length's checksum does not match.
uint64_t DecodeHeader(const char* header, const std::string& source, uint64_t offset);

/// Throws DataError naming `source` and the record's `offset` unless the kFooterSize bytes at
/// `footer` hold the checksum of `data`.
void CheckData(std::string_view data, const char* footer, const std::string& source, uint64_t offset);

}  // namespace est::tfrecord
