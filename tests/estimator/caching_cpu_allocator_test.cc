#include "estimator/caching_cpu_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/test_util.h"

#if EST_UNDER_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace {

constexpr size_t kKiB = 1024;

est::CachingCpuAllocatorOptions SmallOptions() {
  return est::CachingCpuAllocatorOptions().smallest_cached(64 * kKiB).largest_cached(1024 * kKiB).max_cached(
      768 * kKiB);
}

}  // namespace

TEST_CASE("a CachingCpuAllocator hands out the block last freed in the size asked for", "[allocator]") {
  est::CachingCpuAllocator allocator(SmallOptions());
  void* first = nullptr;
  void* second = nullptr;
  {
    c10::DataPtr a = allocator.allocate(100 * kKiB);
    c10::DataPtr b = allocator.allocate(100 * kKiB);
    first = a.get();
    second = b.get();
    REQUIRE(first != second);
    std::memset(first, 1, 100 * kKiB);
    std::memset(second, 2, 100 * kKiB);
  }  // b is freed, then a
  CHECK(allocator.stats().cached_blocks == 2);
  CHECK(allocator.stats().cached_bytes == 200 * kKiB);
  c10::DataPtr newest = allocator.allocate(100 * kKiB);
  c10::DataPtr older = allocator.allocate(100 * kKiB);
  CHECK(newest.get() == first);
  CHECK(older.get() == second);
  c10::DataPtr other_size = allocator.allocate(100 * kKiB + 64);
  CHECK(other_size.get() != first);
  CHECK(other_size.get() != second);
  const est::CachingCpuAllocatorStats stats = allocator.stats();
  CHECK(stats.hits == 2);
  CHECK(stats.misses == 3);
  CHECK(stats.cached_blocks == 0);
  CHECK(stats.cached_bytes == 0);
}

TEST_CASE("a CachingCpuAllocator keeps no block below its smallest or above its largest size", "[allocator]") {
  est::CachingCpuAllocator allocator(SmallOptions());
  for (size_t bytes : {size_t{1}, 64 * kKiB - 1, 1024 * kKiB + 1}) {
    INFO(bytes << " bytes");
    allocator.allocate(bytes);  // freed at once
    CHECK(allocator.stats().cached_blocks == 0);
  }
  allocator.allocate(64 * kKiB);
  allocator.allocate(768 * kKiB);
  // Both kept would be 832 KiB: the 768 KiB block pushed out the 64 KiB one.
  CHECK(allocator.stats().cached_blocks == 1);
  CHECK(allocator.stats().cached_bytes == 768 * kKiB);
  CHECK(allocator.stats().evictions == 1);
  CHECK(allocator.stats().hits + allocator.stats().misses == 2);
}

TEST_CASE("a CachingCpuAllocator's limit pushes out the least recently freed blocks", "[allocator]") {
  est::CachingCpuAllocator allocator(SmallOptions());  // at most 768 KiB kept
  std::vector<void*> freed;
  {
    std::vector<c10::DataPtr> blocks;
    for (int i = 0; i < 4; ++i) blocks.push_back(allocator.allocate(256 * kKiB));
    for (auto& block : blocks) freed.push_back(block.get());
    for (auto& block : blocks) block.clear();  // freed in order 0, 1, 2, 3: the fourth pushes out the first
  }
  const est::CachingCpuAllocatorStats stats = allocator.stats();
  CHECK(stats.evictions == 1);
  CHECK(stats.cached_blocks == 3);
  CHECK(stats.cached_bytes == 768 * kKiB);
  std::vector<c10::DataPtr> again;
  for (int i = 0; i < 3; ++i) again.push_back(allocator.allocate(256 * kKiB));
  CHECK(again[0].get() == freed[3]);
  CHECK(again[1].get() == freed[2]);
  CHECK(again[2].get() == freed[1]);
  CHECK(allocator.stats().hits == 3);

  // A freed block of another size pushes out the oldest kept block of any size.
  for (auto& block : again) block.clear();  // 3, then 2, then 1: 3 is the oldest kept
  allocator.allocate(128 * kKiB);
  CHECK(allocator.stats().evictions == 2);
  CHECK(allocator.stats().cached_bytes == 512 * kKiB + 128 * kKiB);
  c10::DataPtr kept = allocator.allocate(256 * kKiB);
  CHECK(kept.get() == freed[1]);  // the last of the three freed
}

TEST_CASE("a CachingCpuAllocator's blocks are 64-byte aligned and raw allocations round-trip", "[allocator]") {
  est::CachingCpuAllocator allocator(SmallOptions());
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{4096}, 64 * kKiB, 100 * kKiB + 3, 2048 * kKiB}) {
    c10::DataPtr block = allocator.allocate(bytes);
    INFO(bytes << " bytes");
    CHECK(reinterpret_cast<uintptr_t>(block.get()) % 64 == 0);
    std::memset(block.get(), 0xab, bytes);
  }
  c10::DataPtr empty = allocator.allocate(0);
  CHECK(empty.get() == nullptr);
  void* raw = allocator.raw_allocate(128 * kKiB);
  std::memset(raw, 7, 128 * kKiB);
  allocator.raw_deallocate(raw);
  CHECK(allocator.stats().cached_blocks == 3);  // the 64 KiB, the 100 KiB + 3 and the raw block
  allocator.release_cached();
  CHECK(allocator.stats().cached_blocks == 0);
  CHECK(allocator.stats().cached_bytes == 0);
}

TEST_CASE("a CachingCpuAllocator never hands one block to two threads", "[allocator]") {
  est::CachingCpuAllocator allocator(SmallOptions());
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::vector<std::thread> threads;
  std::vector<int> corrupted(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t bytes = (64 + 32 * static_cast<size_t>((round + t) % 3)) * kKiB;
        c10::DataPtr block = allocator.allocate(bytes);
        auto* words = static_cast<int*>(block.get());
        const size_t count = bytes / sizeof(int);
        for (size_t i = 0; i < count; i += 512) words[i] = t * kRounds + round;
        std::this_thread::yield();
        for (size_t i = 0; i < count; i += 512) corrupted[t] += words[i] != t * kRounds + round;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) CHECK(corrupted[t] == 0);
  const est::CachingCpuAllocatorStats stats = allocator.stats();
  CHECK(stats.hits + stats.misses == kThreads * kRounds);
  CHECK(stats.hits > stats.misses);
  CHECK(stats.cached_bytes <= 768 * kKiB);
}

#if EST_UNDER_ASAN
TEST_CASE("under AddressSanitizer a block the CachingCpuAllocator keeps is poisoned until handed out again",
          "[allocator]") {
  est::CachingCpuAllocator allocator(SmallOptions());
  void* data = nullptr;
  {
    c10::DataPtr block = allocator.allocate(100 * kKiB);
    data = block.get();
    CHECK(__asan_address_is_poisoned(data) == 0);
  }
  CHECK(__asan_address_is_poisoned(data) == 1);
  CHECK(__asan_address_is_poisoned(static_cast<char*>(data) + 100 * kKiB - 1) == 1);
  c10::DataPtr again = allocator.allocate(100 * kKiB);
  REQUIRE(again.get() == data);
  CHECK(__asan_address_is_poisoned(data) == 0);
  CHECK(__asan_address_is_poisoned(static_cast<char*>(data) - 1) == 1);  // the block's header
}
#else
TEST_CASE("a CachingCpuAllocator that cannot allocate says how many bytes were asked for", "[allocator]") {
  est::CachingCpuAllocator allocator(SmallOptions());
  allocator.allocate(100 * kKiB);  // kept, then given back before the failure is reported
  const size_t huge = size_t{1} << 60;
  CHECK_THROWS_WITH(allocator.allocate(huge),
                    Catch::Contains("not enough memory: you tried to allocate " + std::to_string(huge) + " bytes"));
  CHECK(allocator.stats().cached_blocks == 0);
}
#endif

TEST_CASE("InstallCachingCpuAllocator makes LibTorch's CPU tensors reuse their freed blocks", "[allocator]") {
  unsetenv("EST_CACHING_CPU_ALLOCATOR");
  REQUIRE(est::InstallCachingCpuAllocator() == est::CpuAllocatorInstall::kInstalled);
  REQUIRE(est::InstallCachingCpuAllocator() == est::CpuAllocatorInstall::kInstalled);  // again: harmless
  est::CachingCpuAllocator* installed = est::InstalledCachingCpuAllocator();
  REQUIRE(installed != nullptr);
  CHECK(c10::GetCPUAllocator() == installed);
  void* first = nullptr;
  {
    torch::Tensor activations = torch::ones({64, 32, 13, 13});
    first = activations.data_ptr();
  }
  const int64_t hits = installed->stats().hits;
  torch::Tensor next = torch::zeros({64, 32, 13, 13});
  CHECK(next.data_ptr() == first);
  CHECK(installed->stats().hits == hits + 1);
  CHECK(next.sum().item<float>() == 0.f);

  // An allocator the application set is its choice: left in place.
  static est::CachingCpuAllocator applications;
  c10::SetCPUAllocator(&applications, /*priority=*/0);
  CHECK(est::InstallCachingCpuAllocator() == est::CpuAllocatorInstall::kLeftToUser);
  CHECK(c10::GetCPUAllocator() == &applications);
  c10::SetCPUAllocator(installed, /*priority=*/0);
  CHECK(est::InstallCachingCpuAllocator() == est::CpuAllocatorInstall::kInstalled);
}

TEST_CASE("EST_CACHING_CPU_ALLOCATOR=0 leaves LibTorch's CPU allocator alone", "[allocator]") {
  setenv("EST_CACHING_CPU_ALLOCATOR", "0", 1);
  CHECK_FALSE(est::CachingCpuAllocatorWanted());
  CHECK(est::InstallCachingCpuAllocator() == est::CpuAllocatorInstall::kLeftToUser);
  setenv("EST_CACHING_CPU_ALLOCATOR", "1", 1);
  CHECK(est::CachingCpuAllocatorWanted());
  unsetenv("EST_CACHING_CPU_ALLOCATOR");
  CHECK(est::CachingCpuAllocatorWanted());
}
