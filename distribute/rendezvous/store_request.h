#pragma once
/// StoreRequest: the framing of the requests a c10d TCPStore client sends its server, for
/// every LibTorch from 1.13 to 2.11 (StoreProtocol), so that a relay (StoreFront) can tell
/// where each request ends, and refuse a malformed or oversized one before the server sees
/// a byte of it.
///
/// A request is one type byte, then its arguments in the client's byte order: a key or a
/// value is a uint64 length and that many bytes, a list of keys is a uint64 count and that
/// many keys, a list of pairs an int64 count and that many keys each followed by a value, a
/// number an int64, and validate's magic number and ping's nonce a uint32.
///
///   set          key, value              multi_get    keys
///   compare_set  key, expected, desired  multi_set    pairs
///   get          key                     cancel_wait  (nothing)
///   add          key, int64              validate     uint32 (kStoreValidationMagic)
///   check        keys                    ping         uint32
///   wait         keys                    queue_push   key, value
///   get_num_keys (nothing)               queue_pop    key
///   watch_key    key                     queue_len    key
///   delete_key   key                     list_keys    (nothing)
///   append       key, value
///
/// Which byte stands for which type changed with LibTorch 2.1, 2.2 (validate first, the
/// rest shifted by one), 2.5, 2.8 and 2.10; see StoreProtocol::OfLibTorch. Refused:
/// watch_key (1.13 and 2.0, whose server keeps a watcher's socket after the watcher has
/// gone, so that the next set of the key fails and closes the setter's connection;
/// TorchEstimator never watches keys), a connection of 2.2 or later that does not open
/// with validate and its magic number, and a second validate. The server's replies are
/// not framed here.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace est::distribute {

/// The request types of c10d's TCPStore protocol, of every version.
enum class StoreRequestType : uint8_t {
  kValidate,
  kSet,
  kCompareSet,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kGetNumKeys,
  kWatchKey,
  kDeleteKey,
  kAppend,
  kMultiGet,
  kMultiSet,
  kCancelWait,
  kPing,
  kQueuePush,
  kQueuePop,
  kQueueLen,
  kListKeys,
};

/// The name of a request type as c10d spells it ("compare_set").
const char* StoreRequestTypeName(StoreRequestType type);

/// validate's argument: c10d's validationMagicNumber (LibTorch 2.2 and later).
constexpr uint32_t kStoreValidationMagic = 0x3C85F7CE;

/// The requests of one LibTorch version's TCPStore client, and the limits its server and a
/// relay in front of it hold them to.
struct StoreProtocol {
  /// "c10d of LibTorch 2.5 to 2.7".
  std::string name;
  /// The request types by type byte.
  std::vector<StoreRequestType> types;
  /// Whether a connection opens with validate, and only then (LibTorch 2.2 and later).
  bool validate_first = false;
  /// The longest key a request may carry. Our keys are names (job, round, rank): tens of
  /// bytes. 64 KiB; 8 KiB where the server is libuv's (2.4 and later), which closes the
  /// connection of a longer one.
  uint64_t max_key_bytes = uint64_t{64} << 10;
  /// The longest value a request may carry. Our largest values are Gloo addresses and
  /// NCCL unique ids (a few KB). 16 MiB; 8 MiB where the server is libuv's.
  uint64_t max_value_bytes = uint64_t{16} << 20;
  /// The most keys (or pairs) one request may name.
  uint64_t max_keys = uint64_t{1} << 16;

  /// The longest request of any type: a compare_set of the longest key and two longest
  /// values. A request of many keys or pairs must fit in it too.
  uint64_t max_request_bytes() const { return 1 + 3 * 8 + max_key_bytes + 2 * max_value_bytes; }
  /// Whether this protocol has `type`.
  bool has(StoreRequestType type) const;
  /// The type byte of `type`; InternalError where this protocol has none.
  uint8_t byte(StoreRequestType type) const;

  /// The protocol of LibTorch `major`.`minor`'s client: 1.13 (and earlier 1.x) to 2.11; a
  /// later 2.x or 3.x is taken to speak 2.11's.
  static const StoreProtocol& OfLibTorch(int major, int minor);
  /// The protocol of the LibTorch this build links.
  static const StoreProtocol& OfThisBuild();
};

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

/// Scans the first request in `data[0, size)` under `protocol`; `first` says whether it is
/// the first request of its connection. A length or count above the protocol's limits is
/// invalid as soon as it has arrived, before the bytes it announces.
StoreRequestScan ScanStoreRequest(const StoreProtocol& protocol, const char* data, size_t size, bool first);

}  // namespace est::distribute
