#include "checkpoint/index_codec.h"

#include <limits>

#include "checkpoint/manifest.pb.h"
#include "common/crc32c.h"
#include "common/error.h"

namespace est::checkpoint {
namespace {

/// The tag of Manifest.index_crc32c: field 15, wire type 5 (fixed32).
constexpr unsigned char kChecksumTag = (15 << 3) | 5;
/// The tag byte followed by the four little-endian bytes of the checksum.
constexpr size_t kTrailerSize = 5;

uint32_t LoadLittleEndian32(const char* p) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 | uint32_t{bytes[2]} << 16 |
         uint32_t{bytes[3]} << 24;
}

}  // namespace

std::string EncodeIndex(const proto::Manifest& manifest) {
  proto::Manifest body = manifest;
  body.clear_index_crc32c();
  std::string bytes = body.SerializeAsString();
  proto::Manifest trailer;
  trailer.set_index_crc32c(crc32c::Value(bytes));
  const std::string trailer_bytes = trailer.SerializeAsString();
  EST_ASSERT(trailer_bytes.size() == kTrailerSize &&
             static_cast<unsigned char>(trailer_bytes[0]) == kChecksumTag);
  return bytes + trailer_bytes;
}

void DecodeIndex(std::string_view bytes, const std::string& index_path, proto::Manifest& manifest) {
  EST_CHECK(bytes.size() >= kTrailerSize &&
                static_cast<unsigned char>(bytes[bytes.size() - kTrailerSize]) == kChecksumTag,
            CheckpointError, "checkpoint index '", index_path, "' (", bytes.size(),
            " bytes) is truncated or not a checkpoint index: it ends neither with a tensor bundle's "
            "table footer nor with a manifest's checksum");
  const std::string_view body = bytes.substr(0, bytes.size() - kTrailerSize);
  const uint32_t stored = LoadLittleEndian32(bytes.data() + body.size() + 1);
  const uint32_t computed = crc32c::Value(body);
  EST_CHECK(stored == computed, CheckpointError, "checkpoint index '", index_path,
            "' is corrupt: its CRC32C is ", computed, " but the file records ", stored);
  // protobuf parses at most INT_MAX bytes at once (ParseFromArray takes an int).
  EST_CHECK(bytes.size() <= static_cast<size_t>(std::numeric_limits<int>::max()), CheckpointError,
            "checkpoint index '", index_path, "' has ", bytes.size(), " bytes, more than a manifest can have");
  EST_CHECK(manifest.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), CheckpointError,
            "checkpoint index '", index_path, "' cannot be parsed as a manifest");
  EST_CHECK(manifest.format_version() == kFormatVersion, CheckpointError, "checkpoint index '",
            index_path, "' has format version ", manifest.format_version(),
            "; this build reads version ", kFormatVersion);
}

}  // namespace est::checkpoint
