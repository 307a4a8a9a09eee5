#include "estimator/caching_cpu_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "common/address_sanitizer.h"
#include "common/memory_limit.h"

#if EST_UNDER_ASAN
#include <sanitizer/asan_interface.h>
#define EST_POISON(address, bytes) ASAN_POISON_MEMORY_REGION(address, bytes)
#define EST_UNPOISON(address, bytes) ASAN_UNPOISON_MEMORY_REGION(address, bytes)
#else
#define EST_POISON(address, bytes) ((void)(address), (void)(bytes))
#define EST_UNPOISON(address, bytes) ((void)(address), (void)(bytes))
#endif

namespace est {
// Block is named in CachingCpuAllocator::State, which has external linkage: not in an
// anonymous namespace (GCC's -Wsubobject-linkage once this file is part of a unity batch).
namespace caching_cpu_allocator {

// LibTorch's CPU alignment (c10::gAlignment), which AVX-512 loads want.
constexpr size_t kAlignment = 64;

// The header in front of every block's data: one alignment unit, so the data stays aligned.
// While a block is kept it sits in two lists: all kept blocks by the time they were freed,
// and the kept blocks of its size, newest first.
struct alignas(kAlignment) Block {
  CachingCpuAllocator::State* owner;
  size_t bytes;  // what allocate() was asked for
  Block* older = nullptr;
  Block* newer = nullptr;
  Block* next_of_size = nullptr;  // older
  Block* previous_of_size = nullptr;
};
static_assert(sizeof(Block) == kAlignment);

}  // namespace caching_cpu_allocator

using caching_cpu_allocator::Block;
using caching_cpu_allocator::kAlignment;

namespace {

void* DataOf(Block* block) { return reinterpret_cast<char*>(block) + sizeof(Block); }
Block* BlockOf(void* data) { return reinterpret_cast<Block*>(static_cast<char*>(data) - sizeof(Block)); }

}  // namespace

struct CachingCpuAllocator::State {
  explicit State(CachingCpuAllocatorOptions options) : options(options) {}

  const CachingCpuAllocatorOptions options;
  std::atomic<int64_t> live_bytes{0};  // handed out and not yet freed, for LibTorch's memory profiler

  std::mutex mutex;  // guards everything below
  std::unordered_map<size_t, Block*> newest_of_size;
  Block* newest = nullptr;
  Block* oldest = nullptr;
  CachingCpuAllocatorStats stats;

  bool cacheable(size_t bytes) const {
    return bytes >= options.smallest_cached_bytes && bytes <= options.largest_cached_bytes &&
           bytes <= options.max_cached_bytes;
  }

  // A kept block of `bytes`, the most recently freed; nullptr when none. Locked.
  Block* take(size_t bytes) {
    auto found = newest_of_size.find(bytes);
    if (found == newest_of_size.end()) return nullptr;
    Block* block = found->second;
    unlink(block, found);
    return block;
  }

  // Keeps `block`, giving back the least recently freed blocks beyond the limit. Locked.
  void keep(Block* block) {
    while (oldest != nullptr && stats.cached_bytes + block->bytes > options.max_cached_bytes) {
      Block* evicted = oldest;
      unlink(evicted, newest_of_size.find(evicted->bytes));
      ++stats.evictions;
      std::free(evicted);
    }
    Block*& of_size = newest_of_size[block->bytes];
    block->next_of_size = of_size;
    block->previous_of_size = nullptr;
    if (of_size != nullptr) of_size->previous_of_size = block;
    of_size = block;
    block->older = newest;
    block->newer = nullptr;
    (newest != nullptr ? newest->newer : oldest) = block;
    newest = block;
    stats.cached_bytes += block->bytes;
    ++stats.cached_blocks;
    EST_POISON(DataOf(block), block->bytes);
  }

  // Takes a kept `block` out of both lists; `of_size` is its size's entry. Locked.
  void unlink(Block* block, std::unordered_map<size_t, Block*>::iterator of_size) {
    EST_UNPOISON(DataOf(block), block->bytes);
    if (block->previous_of_size != nullptr) {
      block->previous_of_size->next_of_size = block->next_of_size;
    } else if (block->next_of_size != nullptr) {
      of_size->second = block->next_of_size;
    } else {
      newest_of_size.erase(of_size);
    }
    if (block->next_of_size != nullptr) block->next_of_size->previous_of_size = block->previous_of_size;
    (block->newer != nullptr ? block->newer->older : newest) = block->older;
    (block->older != nullptr ? block->older->newer : oldest) = block->newer;
    stats.cached_bytes -= block->bytes;
    --stats.cached_blocks;
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mutex);
    while (oldest != nullptr) {
      Block* block = oldest;
      unlink(block, newest_of_size.find(block->bytes));
      std::free(block);
    }
  }

  void report(void* data, int64_t bytes) {
    const int64_t live = live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (c10::memoryProfilingEnabled()) {
      int64_t reserved = live;
      {
        std::lock_guard<std::mutex> lock(mutex);
        reserved += static_cast<int64_t>(stats.cached_bytes);
      }
      c10::reportMemoryUsageToProfiler(data, bytes, live, reserved, c10::Device(c10::DeviceType::CPU));
    }
  }

  void free_block(Block* block) {
    report(DataOf(block), -static_cast<int64_t>(block->bytes));
    if (cacheable(block->bytes)) {
      std::lock_guard<std::mutex> lock(mutex);
      keep(block);
      return;
    }
    std::free(block);
  }
};

namespace {

void Delete(void* data) {
  if (data == nullptr) return;
  Block* block = BlockOf(data);
  EST_UNPOISON(block, sizeof(Block));
  block->owner->free_block(block);
}

}  // namespace

CachingCpuAllocator::CachingCpuAllocator(CachingCpuAllocatorOptions options)
    : state_(std::make_unique<State>(options)) {}

CachingCpuAllocator::~CachingCpuAllocator() { state_->release_all(); }

c10::DataPtr CachingCpuAllocator::allocate(size_t bytes) const {
  const c10::Device cpu(c10::DeviceType::CPU);
  if (bytes == 0) return {nullptr, nullptr, &Delete, cpu};
  Block* block = nullptr;
  if (state_->cacheable(bytes)) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    block = state_->take(bytes);
    ++(block != nullptr ? state_->stats.hits : state_->stats.misses);
  }
  if (block == nullptr) {
    void* memory = nullptr;
    if (::posix_memalign(&memory, kAlignment, sizeof(Block) + bytes) != 0) {
      state_->release_all();  // kept blocks of other sizes may make room
      if (::posix_memalign(&memory, kAlignment, sizeof(Block) + bytes) != 0) memory = nullptr;
    }
    TORCH_CHECK(memory != nullptr, "CachingCpuAllocator: not enough memory: you tried to allocate ", bytes,
                " bytes.");
    block = new (memory) Block{state_.get(), bytes};
  }
  void* data = DataOf(block);
  state_->report(data, static_cast<int64_t>(bytes));
  EST_POISON(block, sizeof(Block));
  return {data, data, &Delete, cpu};
}

c10::DeleterFnPtr CachingCpuAllocator::raw_deleter() const { return &Delete; }

void CachingCpuAllocator::release_cached() const { state_->release_all(); }

CachingCpuAllocatorStats CachingCpuAllocator::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

bool CachingCpuAllocatorWanted() {
  const char* value = std::getenv("EST_CACHING_CPU_ALLOCATOR");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

namespace {

// The process's allocator: made on first use and never destroyed, since tensors it
// allocated may be freed during static destruction.
CachingCpuAllocator& ProcessAllocator() {
  const CachingCpuAllocatorOptions defaults;
  static auto* allocator = new CachingCpuAllocator(CachingCpuAllocatorOptions(defaults).max_cached(
      static_cast<size_t>(std::min<uint64_t>(defaults.max_cached_bytes, MemoryLimitBytes() / 16))));
  return *allocator;
}

std::atomic<CachingCpuAllocator*> installed{nullptr};

}  // namespace

CpuAllocatorInstall InstallCachingCpuAllocator() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (!CachingCpuAllocatorWanted()) return CpuAllocatorInstall::kLeftToUser;
  CachingCpuAllocator& ours = ProcessAllocator();
  c10::Allocator* current = c10::GetCPUAllocator();
  // Any allocator but LibTorch's default is the application's choice.
  if (current != &ours && current != c10::GetDefaultCPUAllocator()) return CpuAllocatorInstall::kLeftToUser;
  c10::SetCPUAllocator(&ours, /*priority=*/0);
  if (c10::GetCPUAllocator() != &ours) return CpuAllocatorInstall::kLeftToUser;
  installed.store(&ours);
  return CpuAllocatorInstall::kInstalled;
}

CachingCpuAllocator* InstalledCachingCpuAllocator() { return installed.load(); }

}  // namespace est
