#pragma once
/// StoreRequest: the framing of the requests a c10d TCPStore client of LibTorch 1.13 sends
/// its server, so that a relay (StoreFront) can tell where each request ends, and refuse a
/// malformed or oversized one before the server sees a byte of it.
///
/// A request is one type byte, then its arguments in the client's byte order: a key or a
/// value is a uint64 length and that many bytes, a list of keys is a uint64 count and that
/// many keys, a number is an int64.
///
///   0 set          key, value              5 wait         keys
///   1 compare_set  key, expected, desired  6 get_num_keys (nothing)
///   2 get          key                     7 watch_key    key
///   3 add          key, int64              8 delete_key   key
///   4 check        keys
///
/// watch_key is refused (kInvalid): c10d 1.13's server keeps a watcher's socket after the
/// watcher has gone, and the next set of the key then fails, closing the connection of the
/// client that set it; TorchEstimator never watches keys. The server's replies are not
/// framed here.

#include <cstddef>
#include <cstdint>
#include <string>

namespace est::distribute {

/// The longest key a request may carry. Our keys are names (job, round, rank): tens of bytes.
constexpr uint64_t kMaxStoreKeyBytes = uint64_t{64} << 10;
/// The longest value a request may carry. Our largest values are Gloo addresses and NCCL
/// unique ids (a few KB); 16 MiB leaves room for any rendezvous payload.
constexpr uint64_t kMaxStoreValueBytes = uint64_t{16} << 20;
/// The most keys one check or wait may name.
constexpr uint64_t kMaxStoreKeysPerRequest = uint64_t{1} << 16;
/// The longest request of any type: a compare_set of the longest key and two longest
/// values. A check or wait of many keys must fit in it too.
constexpr uint64_t kMaxStoreRequestBytes = 1 + 3 * 8 + kMaxStoreKeyBytes + 2 * kMaxStoreValueBytes;

/// Where the first request in a stream of bytes ends, as far as those bytes tell.
struct StoreRequestScan {
  enum class Status {
    kComplete,    ///< the bytes begin with a whole, valid request of `length` bytes
    kIncomplete,  ///< the bytes are the valid beginning of a request: wait for more
    kInvalid,     ///< the bytes cannot begin a valid request: see `error`
  };
  Status status = Status::kIncomplete;
  /// kComplete: the length of the request.
  size_t length = 0;
  /// kInvalid: what is wrong and what was expected ("unknown request type 200 (expected 0 to 8)").
  std::string error;
};

/// Scans the first request in `data[0, size)`. A length or count above the limits above is
/// invalid as soon as it has arrived, before the bytes it announces.
StoreRequestScan ScanStoreRequest(const char* data, size_t size);

}  // namespace est::distribute
