// Before any library's initializer runs: OpenBLAS (LibTorch's BLAS on Debian) allocates a
// 129 MiB buffer in its initializer, before main(), and when the address-space limit
// (ulimit -v) leaves less than that it retries forever at 100 % CPU; a little more and other
// initializers abort with std::bad_alloc. So est-train, first of all (.preinit_array, which
// runs before the libraries' initializers), reserves that much address space plus a margin
// and, when it cannot, says so in one line and exits 1. Only system calls run here: the C
// library is not initialized yet.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "estimator/address_space_check.h"

namespace {

/// Beyond OpenBLAS's buffer (est::kOpenBlasBufferBytes), a margin for what the libraries'
/// other initializers allocate (measured: LibTorch's and its dependencies' take about
/// 190 MiB more; short of that they abort with std::bad_alloc).
constexpr size_t kMarginBytes = size_t{256} << 20;

/// Writes `text` to stderr.
void Say(const char* text) {
  size_t length = 0;
  while (text[length] != '\0') ++length;
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text, length);
}

/// `value` in decimal into `out` (at least 21 bytes); returns `out`.
const char* Decimal(uint64_t value, char* out) {
  char reversed[21];
  int count = 0;
  do {
    reversed[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  for (int i = 0; i < count; ++i) out[i] = reversed[count - 1 - i];
  out[count] = '\0';
  return out;
}

/// The bytes of address space this process holds now (/proc/self/statm's first field), 0
/// when unknown.
uint64_t AddressSpaceInUse() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[64];
  const ssize_t count = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  uint64_t pages = 0;
  for (ssize_t i = 0; i < count && text[i] >= '0' && text[i] <= '9'; ++i) pages = pages * 10 + (text[i] - '0');
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

void CheckAddressSpaceLimit(int, char**, char**) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const size_t wanted = est::kOpenBlasBufferBytes + kMarginBytes;
  void* reserved = ::mmap(nullptr, wanted, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved != MAP_FAILED) {
    ::munmap(reserved, wanted);
    return;
  }
  char limit_kib[21];
  char needed_kib[21];
  Say("est-train: error: the address-space limit (ulimit -v ");
  Say(Decimal(static_cast<uint64_t>(limit.rlim_cur) / 1024, limit_kib));
  Say(") is too small to load LibTorch: OpenBLAS, its BLAS, allocates 129 MiB as it loads and retries forever "
      "when it cannot; allow at least ");
  Say(Decimal((AddressSpaceInUse() + wanted) / 1024 + 1, needed_kib));
  Say(" KiB to load, and more to train (ulimit -v unlimited to lift it)\n");
  ::_exit(1);
}

}  // namespace

// Run by the dynamic loader before any shared library's initializer (executables only).
__attribute__((section(".preinit_array"), used)) void (*const kCheckAddressSpaceLimit)(int, char**, char**) =
    &CheckAddressSpaceLimit;
