/// libFuzzer harness for the scanner of c10d store requests (distribute/store_request.h),
/// which judges bytes from any client that reaches the chief's store port. The input is a
/// stream of bytes as a client sends them. Any crash or sanitizer report is a bug, and so is
/// a broken promise of the scanner:
/// - a whole request fits in the bytes and in kMaxStoreRequestBytes, and every shorter
///   prefix of it is the valid beginning of a request (kIncomplete);
/// - bytes that follow a request never change its verdict;
/// - an invalid verdict says why, and stays invalid when more bytes arrive.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "distribute/store_request.h"

namespace {

using est::distribute::ScanStoreRequest;
using est::distribute::StoreRequestScan;
using Status = StoreRequestScan::Status;

bool SameVerdict(const StoreRequestScan& a, const StoreRequestScan& b) {
  return a.status == b.status && a.length == b.length && a.error == b.error;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const char* data = reinterpret_cast<const char*>(bytes);
  size_t offset = 0;
  // Each request in turn, as the front forwards a pipelined stream.
  while (offset < size) {
    const StoreRequestScan scan = ScanStoreRequest(data + offset, size - offset);
    if (scan.status == Status::kIncomplete) {
      if (scan.length != 0 || !scan.error.empty()) std::abort();
      return 0;
    }
    if (scan.status == Status::kInvalid) {
      if (scan.error.empty()) std::abort();
      // Fewer bytes may still be incomplete, never a whole request.
      for (size_t prefix = 0; prefix < size - offset; prefix += 1 + prefix / 8) {
        if (ScanStoreRequest(data + offset, prefix).status == Status::kComplete) std::abort();
      }
      return 0;
    }
    if (scan.length == 0 || scan.length > size - offset || scan.length > est::distribute::kMaxStoreRequestBytes) {
      std::abort();
    }
    if (!SameVerdict(ScanStoreRequest(data + offset, scan.length), scan)) std::abort();
    for (size_t prefix = 0; prefix < scan.length; ++prefix) {
      if (ScanStoreRequest(data + offset, prefix).status != Status::kIncomplete) std::abort();
    }
    offset += scan.length;
  }
  return 0;
}
