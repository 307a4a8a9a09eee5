/// libFuzzer harness for the scanner of c10d store requests (distribute/rendezvous/store_request.h),
/// which judges bytes from any client that reaches the chief's store port. The input is a
/// stream of bytes as a client sends them, scanned under every LibTorch version's protocol,
/// as a connection's first request and as a later one. Any crash or sanitizer report is a
/// bug, and so is a broken promise of the scanner:
/// - a whole request fits in the bytes and in the protocol's max_request_bytes(), and every
///   shorter prefix of it is the valid beginning of a request (kIncomplete);
/// - bytes that follow a request never change its verdict;
/// - an invalid verdict says why, and stays invalid when more bytes arrive.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "distribute/rendezvous/store_request.h"

namespace {

using est::distribute::ScanStoreRequest;
using est::distribute::StoreProtocol;
using est::distribute::StoreRequestScan;
using Status = StoreRequestScan::Status;

bool SameVerdict(const StoreRequestScan& a, const StoreRequestScan& b) {
  return a.status == b.status && a.length == b.length && a.error == b.error;
}

// Each request in turn, as the front forwards a pipelined stream; aborts at a broken promise.
void ScanStream(const StoreProtocol& protocol, const char* data, size_t size, bool first) {
  size_t offset = 0;
  while (offset < size) {
    const StoreRequestScan scan = ScanStoreRequest(protocol, data + offset, size - offset, first);
    if (scan.status == Status::kIncomplete) {
      if (scan.length != 0 || !scan.error.empty()) std::abort();
      return;
    }
    if (scan.status == Status::kInvalid) {
      if (scan.error.empty()) std::abort();
      // Fewer bytes may still be incomplete, never a whole request.
      for (size_t prefix = 0; prefix < size - offset; prefix += 1 + prefix / 8) {
        if (ScanStoreRequest(protocol, data + offset, prefix, first).status == Status::kComplete) std::abort();
      }
      return;
    }
    if (scan.length == 0 || scan.length > size - offset || scan.length > protocol.max_request_bytes()) {
      std::abort();
    }
    if (!SameVerdict(ScanStoreRequest(protocol, data + offset, scan.length, first), scan)) std::abort();
    for (size_t prefix = 0; prefix < scan.length; ++prefix) {
      if (ScanStoreRequest(protocol, data + offset, prefix, first).status != Status::kIncomplete) std::abort();
    }
    offset += scan.length;
    first = false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const char* data = reinterpret_cast<const char*>(bytes);
  // One version of each protocol: 1.13, 2.1, 2.2, 2.4, 2.5, 2.8, 2.10.
  static const int kMinors[] = {-1, 1, 2, 4, 5, 8, 10};
  for (int minor : kMinors) {
    const StoreProtocol& protocol = minor < 0 ? StoreProtocol::OfLibTorch(1, 13) : StoreProtocol::OfLibTorch(2, minor);
    ScanStream(protocol, data, size, /*first=*/true);
    ScanStream(protocol, data, size, /*first=*/false);
  }
  return 0;
}
