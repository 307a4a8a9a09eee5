#include "distribute/collective/shared_memory_allreduce.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <new>
#include <random>
#include <sstream>
#include <string>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/collective/host_identity.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {

/// The start of the segment: the barrier, then per-rank records (after the fixed part).
struct SharedMemoryAllreduce::Header {
  std::atomic<uint32_t> generation{0};  ///< futex word: bumped by the last rank to reach a barrier
  std::atomic<uint32_t> arrived{0};     ///< ranks at the current barrier
  std::atomic<uint32_t> failure{0};     ///< the first failure (Failure() encoding), 0 while healthy
  uint32_t world_size = 0;
};

namespace {

constexpr size_t kHeaderBytes = 64;
constexpr size_t kPage = 4096;
constexpr size_t kMaxChunkBytes = size_t{4} << 20;
constexpr size_t kMinChunkBytes = size_t{256} << 10;
constexpr size_t kSegmentBudget = size_t{64} << 20;  ///< slots of both sets, at most (beyond the minimum chunk)
constexpr int kSpins = 2000;
constexpr auto kLivenessPeriod = std::chrono::milliseconds(50);

// The first failure, as the header records it: what happened, and to which rank.
enum class FailureKind : uint32_t { kExited = 1, kClosed = 2, kTimedOut = 3, kCutOff = 4 };
uint32_t EncodeFailure(FailureKind kind, int rank) {
  return static_cast<uint32_t>(kind) << 24 | static_cast<uint32_t>(rank);
}

// Per-rank records after the header: barriers entered, then the numel and dtype of its chunk.
std::atomic<uint64_t>* Entered(void* base) {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<std::byte*>(base) + kHeaderBytes);
}
std::atomic<int64_t>* ChunkNumel(void* base, int world_size) {
  return reinterpret_cast<std::atomic<int64_t>*>(Entered(base) + world_size);
}
std::atomic<int32_t>* ChunkType(void* base, int world_size) {
  return reinterpret_cast<std::atomic<int32_t>*>(ChunkNumel(base, world_size) + world_size);
}
size_t DataOffset(int world_size) {
  const size_t records = kHeaderBytes + static_cast<size_t>(world_size) * (8 + 8 + 4);
  return (records + kPage - 1) / kPage * kPage;
}
// Slots per set: one per rank, and one for the sum.
size_t ChunkBytes(int world_size) {
  const size_t slots = 2 * static_cast<size_t>(world_size + 1);
  const size_t chunk = std::clamp(kSegmentBudget / slots, kMinChunkBytes, kMaxChunkBytes);
  return chunk / kPage * kPage;
}

std::string NewSegmentName() {
  std::random_device random;
  std::ostringstream name;
  name << "/est-allreduce-" << ::getpid() << "-" << std::hex << random() << random();
  return name.str();
}

// Whether process `pid` has exited: gone, or a zombie its parent has not reaped yet.
bool ProcessExited(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return ::kill(pid, 0) != 0 && errno == ESRCH;
  const size_t name_end = text.rfind(')');  // the state follows the parenthesized command name
  return name_end != std::string::npos && name_end + 2 < text.size() &&
         (text[name_end + 2] == 'Z' || text[name_end + 2] == 'X');
}

long Futex(std::atomic<uint32_t>& word, int operation, uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), operation, value, timeout, nullptr, 0);
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The segment's name while rank 0 may still need to remove it.
class SegmentName {
 public:
  explicit SegmentName(std::string name) : name_(std::move(name)) {}
  ~SegmentName() { remove(); }
  SegmentName(const SegmentName&) = delete;
  SegmentName& operator=(const SegmentName&) = delete;
  void remove() {
    if (!name_.empty()) ::shm_unlink(name_.c_str());
    name_.clear();
  }

 private:
  std::string name_;
};

// Maps `name` (creating and reserving `bytes` when `create`); null with the reason logged on failure.
void* MapSegment(const std::string& name, size_t bytes, bool create) {
  const int fd = ::shm_open(name.c_str(), create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
  if (fd < 0) {
    Log().warn("shared-memory all-reduce: cannot open {}: {}; staying on TCP", name, std::strerror(errno));
    return nullptr;
  }
  // posix_fallocate reserves the pages, so a full /dev/shm is an error here, not a SIGBUS later.
  const int reserved = create ? ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) : 0;
  void* base = reserved == 0 ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int error = reserved != 0 ? reserved : errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    Log().warn("shared-memory all-reduce: cannot map {} bytes of {}: {}; staying on TCP", bytes, name,
               std::strerror(error));
    return nullptr;
  }
  return base;
}

}  // namespace

std::unique_ptr<SharedMemoryAllreduce> SharedMemoryAllreduce::Connect(Store& store, int rank, int world_size,
                                                                      std::chrono::milliseconds timeout) {
  EST_CHECK(world_size > 1 && rank >= 0 && rank < world_size, ConfigError,
            "shared-memory all-reduce: rank ", rank, " of ", world_size, " is not a rank of a group of two or more");
  const std::string identity = detail::HostIdentity();
  store.set("shm/identity/" + std::to_string(rank), identity);
  store.set("shm/pid/" + std::to_string(rank), std::to_string(::getpid()));
  bool one_host = true;
  std::vector<pid_t> pids;
  for (int q = 0; q < world_size; ++q) {
    one_host = one_host && store.get("shm/identity/" + std::to_string(q), timeout) == identity;
    pids.push_back(static_cast<pid_t>(std::stol(store.get("shm/pid/" + std::to_string(q), timeout))));
  }
  if (!one_host) return nullptr;  // every rank read the same identities: all agree

  const size_t chunk_bytes = ChunkBytes(world_size);
  const size_t bytes = DataOffset(world_size) + 2 * static_cast<size_t>(world_size + 1) * chunk_bytes;
  std::string name = rank == 0 ? NewSegmentName() : std::string();
  SegmentName owned(rank == 0 ? name : std::string());  // rank 0 removes the name on every path
  void* base = nullptr;
  if (rank == 0) {
    base = MapSegment(name, bytes, /*create=*/true);
    if (base != nullptr) {
      auto* header = new (base) Header();
      header->world_size = static_cast<uint32_t>(world_size);
      for (int q = 0; q < world_size; ++q) {
        new (Entered(base) + q) std::atomic<uint64_t>(0);
        new (ChunkNumel(base, world_size) + q) std::atomic<int64_t>(0);
        new (ChunkType(base, world_size) + q) std::atomic<int32_t>(0);
      }
    }
    store.set("shm/name", base != nullptr ? name : "");
  } else {
    name = store.get("shm/name", timeout);
    if (!name.empty()) base = MapSegment(name, bytes, /*create=*/false);
  }
  store.set("shm/mapped/" + std::to_string(rank), base != nullptr ? "1" : "0");
  bool everyone_mapped = true;
  for (int q = 0; q < world_size; ++q)
    everyone_mapped = store.get("shm/mapped/" + std::to_string(q), timeout) == "1" && everyone_mapped;
  owned.remove();  // every rank has opened it (or given up): the name is no longer needed
  if (!everyone_mapped) {
    if (base != nullptr) ::munmap(base, bytes);
    return nullptr;
  }
  return std::unique_ptr<SharedMemoryAllreduce>(
      new SharedMemoryAllreduce(rank, world_size, timeout, base, bytes, chunk_bytes, std::move(pids)));
}

SharedMemoryAllreduce::SharedMemoryAllreduce(int rank, int world_size, std::chrono::milliseconds timeout, void* base,
                                             size_t bytes, size_t chunk_bytes, std::vector<pid_t> pids)
    : rank_(rank),
      world_size_(world_size),
      timeout_(timeout),
      base_(base),
      bytes_(bytes),
      chunk_bytes_(chunk_bytes),
      pids_(std::move(pids)),
      header_(static_cast<Header*>(base)) {}

SharedMemoryAllreduce::~SharedMemoryAllreduce() {
  // A rank still waiting for this one fails at once rather than at its timeout.
  record_failure(EncodeFailure(FailureKind::kClosed, rank_));
  ::munmap(base_, bytes_);
}

bool SharedMemoryAllreduce::Supports(const at::Tensor& tensor) {
  const at::ScalarType type = tensor.scalar_type();
  return tensor.device().is_cpu() && tensor.is_contiguous() && !tensor.is_sparse() &&
         (type == at::kFloat || type == at::kDouble || type == at::kInt || type == at::kLong);
}

std::byte* SharedMemoryAllreduce::slot(int set, int rank) const {
  const size_t index = static_cast<size_t>(set) * static_cast<size_t>(world_size_ + 1) + static_cast<size_t>(rank);
  return static_cast<std::byte*>(base_) + DataOffset(world_size_) + index * chunk_bytes_;
}

void SharedMemoryAllreduce::check_usable(const char* operation) {
  operation_ = operation;
  EST_CHECK(!broken_, CommunicationError, "Gloo ", operation_, " on rank ", rank_, " of ", world_size_,
            " (shared memory): an earlier operation failed; the collective cannot be used again");
}

// After a chunk's first barrier: every rank's chunk has this one's size and dtype.
void SharedMemoryAllreduce::check_chunks(int64_t count, const char* unit, at::ScalarType type) {
  for (int q = 0; q < world_size_; ++q) {
    const int64_t their_count = ChunkNumel(base_, world_size_)[q].load(std::memory_order_relaxed);
    const int32_t their_type = ChunkType(base_, world_size_)[q].load(std::memory_order_relaxed);
    if (their_count != count || their_type != static_cast<int32_t>(type)) {
      broken_ = true;
      EST_THROW(CommunicationError, "Gloo ", operation_, " on rank ", rank_, " of ", world_size_,
                " (shared memory): rank ", q, " passes a chunk of ", their_count, " ", unit, " of ",
                at::toString(static_cast<at::ScalarType>(their_type)), ", this rank ", count, " of ",
                at::toString(type), "; every rank must pass the same tensors in the same order");
    }
  }
}

void SharedMemoryAllreduce::allreduce(at::Tensor& tensor) {
  check_usable("allreduce");
  EST_ASSERT(Supports(tensor), "SharedMemoryAllreduce::allreduce: unsupported tensor");
  const int64_t numel = tensor.numel();
  const auto element = static_cast<int64_t>(tensor.element_size());
  const int64_t chunk_elements = static_cast<int64_t>(chunk_bytes_) / element;
  auto* data = static_cast<std::byte*>(tensor.data_ptr());
  const at::TensorOptions options = at::TensorOptions().dtype(tensor.scalar_type());
  for (int64_t done = 0; done < numel;) {
    const int64_t count = std::min(chunk_elements, numel - done);
    const int set = static_cast<int>(chunks_++ % 2);
    std::memcpy(slot(set, rank_), data + done * element, static_cast<size_t>(count * element));
    ChunkNumel(base_, world_size_)[rank_].store(count, std::memory_order_relaxed);
    ChunkType(base_, world_size_)[rank_].store(static_cast<int32_t>(tensor.scalar_type()), std::memory_order_relaxed);
    barrier();
    check_chunks(count, "elements", tensor.scalar_type());
    // This rank's part of the chunk, summed over every rank's slot into the sum slot.
    const int64_t begin = count * rank_ / world_size_;
    const int64_t end = count * (rank_ + 1) / world_size_;
    if (end > begin) {
      auto part = [&](int q) {
        return at::from_blob(slot(set, q) + begin * element, {end - begin}, options);
      };
      at::Tensor sum = part(world_size_);
      at::add_out(sum, part(0), part(1));
      for (int q = 2; q < world_size_; ++q) sum.add_(part(q));
    }
    barrier();
    std::memcpy(data + done * element, slot(set, world_size_), static_cast<size_t>(count * element));
    done += count;
  }
}

void SharedMemoryAllreduce::broadcast(at::Tensor& tensor, int root) {
  check_usable("broadcast");
  EST_ASSERT(root >= 0 && root < world_size_ && tensor.device().is_cpu() && tensor.is_contiguous(),
             "SharedMemoryAllreduce::broadcast: a contiguous CPU tensor and a root in [0, world_size)");
  const auto bytes = static_cast<int64_t>(tensor.nbytes());
  auto* data = static_cast<std::byte*>(tensor.data_ptr());
  for (int64_t done = 0; done < bytes;) {
    const int64_t count = std::min(static_cast<int64_t>(chunk_bytes_), bytes - done);
    const int set = static_cast<int>(chunks_++ % 2);
    if (rank_ == root) std::memcpy(slot(set, root), data + done, static_cast<size_t>(count));
    ChunkNumel(base_, world_size_)[rank_].store(count, std::memory_order_relaxed);
    ChunkType(base_, world_size_)[rank_].store(static_cast<int32_t>(tensor.scalar_type()), std::memory_order_relaxed);
    barrier();
    check_chunks(count, "bytes", tensor.scalar_type());
    if (rank_ != root) std::memcpy(data + done, slot(set, root), static_cast<size_t>(count));
    // The sizes are read before anyone writes the next chunk's.
    barrier();
    done += count;
  }
}

std::optional<int> SharedMemoryAllreduce::lost_rank() const {
  const uint32_t failure = header_->failure.load(std::memory_order_acquire);
  const auto kind = static_cast<FailureKind>(failure >> 24);
  if (kind != FailureKind::kExited && kind != FailureKind::kCutOff) return std::nullopt;
  return static_cast<int>(failure & 0xffffffu);
}

void SharedMemoryAllreduce::cut_off(int rank) {
  EST_CHECK(rank >= 0 && rank < world_size_ && rank != rank_, ConfigError, "shared-memory all-reduce of rank ", rank_,
            " of ", world_size_, ": cannot cut off rank ", rank, " (another rank in [0, ", world_size_, ") expected)");
  record_failure(EncodeFailure(FailureKind::kCutOff, rank));
}

std::function<std::vector<int>()> SharedMemoryAllreduce::exited_ranks_watch() const {
  return [pids = pids_, self = ::getpid()] {
    std::vector<int> exited;
    for (size_t q = 0; q < pids.size(); ++q)
      if (pids[q] != self && ProcessExited(pids[q])) exited.push_back(static_cast<int>(q));
    return exited;
  };
}

bool SharedMemoryAllreduce::peer_gone() const { return header_->failure.load(std::memory_order_acquire) != 0; }

void SharedMemoryAllreduce::record_failure(uint32_t failure) {
  uint32_t healthy = 0;
  header_->failure.compare_exchange_strong(healthy, failure, std::memory_order_acq_rel);
  Futex(header_->generation, FUTEX_WAKE, INT_MAX, nullptr);
}

void SharedMemoryAllreduce::barrier() {
  const uint32_t generation = header_->generation.load(std::memory_order_acquire);
  if (peer_gone()) fail_waiting(/*timed_out=*/false, -1);
  Entered(base_)[rank_].store(++barriers_, std::memory_order_relaxed);
  if (header_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(world_size_)) {
    header_->arrived.store(0, std::memory_order_relaxed);
    header_->generation.fetch_add(1, std::memory_order_release);
    Futex(header_->generation, FUTEX_WAKE, INT_MAX, nullptr);
    return;
  }
  for (int spin = 0; spin < kSpins; ++spin) {
    if (header_->generation.load(std::memory_order_acquire) != generation) return;
    CpuRelax();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  const timespec period{0, std::chrono::duration_cast<std::chrono::nanoseconds>(kLivenessPeriod).count()};
  while (header_->generation.load(std::memory_order_acquire) == generation) {
    if (peer_gone()) fail_waiting(/*timed_out=*/false, -1);
    if (std::chrono::steady_clock::now() >= deadline) fail_waiting(/*timed_out=*/true, -1);
    for (int q = 0; q < world_size_; ++q)
      if (pids_[static_cast<size_t>(q)] != ::getpid() && ProcessExited(pids_[static_cast<size_t>(q)]))
        fail_waiting(/*timed_out=*/false, q);
    Futex(header_->generation, FUTEX_WAIT, generation, &period);
  }
}

void SharedMemoryAllreduce::fail_waiting(bool timed_out, int exited_rank) {
  broken_ = true;
  const std::string operation =
      std::string("Gloo ") + operation_ + " on rank " + std::to_string(rank_) + " of " + std::to_string(world_size_);
  // The ranks that have not entered this call, with their pids: "rank 2 (pid 4711)".
  const auto missing = [&] {
    std::vector<int> ranks;
    std::string pids;
    for (int q = 0; q < world_size_; ++q)
      if (Entered(base_)[q].load(std::memory_order_relaxed) < barriers_) {
        ranks.push_back(q);
        pids += (pids.empty() ? "" : ", ") + std::to_string(pids_[static_cast<size_t>(q)]);
      }
    return ranks.empty() ? std::string() : DescribeRanks(ranks) + " (pid " + pids + ")";
  };
  if (timed_out) {
    record_failure(EncodeFailure(FailureKind::kTimedOut, rank_));
    EST_THROW(TimeoutError, operation, " did not complete within ", DescribeDuration(timeout_), ": ", missing(),
              " did not arrive (shared memory; a peer stopped or is stuck; the collective cannot be used again)");
  }
  if (exited_rank >= 0) record_failure(EncodeFailure(FailureKind::kExited, exited_rank));
  // Every rank names the first failure, whoever saw it.
  const uint32_t failure = header_->failure.load(std::memory_order_acquire);
  const auto kind = static_cast<FailureKind>(failure >> 24);
  const int rank = static_cast<int>(failure & 0xffffffu);
  EST_CHECK(kind != FailureKind::kExited, CommunicationError, operation, " failed: rank ", rank, " (pid ",
            pids_[static_cast<size_t>(rank)], ") exited (shared memory; the collective cannot be used again)");
  EST_CHECK(kind != FailureKind::kClosed, CommunicationError, operation, " failed: rank ", rank,
            " closed its collective (shared memory; the collective cannot be used again)");
  EST_CHECK(kind != FailureKind::kCutOff, CommunicationError, operation, " failed: rank ", rank, " (pid ",
            pids_[static_cast<size_t>(rank)],
            ") was cut off: it stopped beating (stopped, or its process hung; shared memory; the collective cannot be "
            "used again)");
  const std::string absent = missing();
  EST_THROW(CommunicationError, operation, " failed: rank ", rank, " timed out waiting for its peers",
            absent.empty() ? std::string() : ": " + absent + " did not arrive",
            " (shared memory; the collective cannot be used again)");
}

}  // namespace est::distribute
