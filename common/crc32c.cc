#include "common/crc32c.h"

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace est::crc32c {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    t[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b)
    for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  return t;
}

const Tables& GetTables() {
  static const Tables tables = MakeTables();
  return tables;
}

// The portable path: eight bytes per step through the slicing tables.
uint32_t ExtendWithTables(uint32_t crc, const unsigned char* p, size_t n) {
  const Tables& t = GetTables();
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian hosts only, as is every platform LibTorch supports here
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xffu];
  return ~c;
}

using ExtendFunction = uint32_t (*)(uint32_t, const unsigned char*, size_t);

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes this very polynomial, eight bytes at a time. Its
// latency is three cycles and its throughput one per cycle, so three independent streams
// over adjacent blocks run about three times as fast as one; their CRCs are then joined
// by "shifting" a CRC register over a block of zeros, which is linear in the register.

/// Bytes of each of the three blocks processed side by side: long blocks for long buffers,
/// short ones for what is left, so that a record of a few hundred bytes takes three streams too.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

/// shift[k][b]: the register that (b << 8k) becomes after a block of zero bytes.
using ShiftTables = std::array<std::array<uint32_t, 256>, 4>;

/// The shift tables of blocks of `block` bytes (a multiple of 8).
__attribute__((target("sse4.2"))) ShiftTables MakeShiftTables(size_t block) {
  std::array<uint32_t, 32> basis{};
  for (int bit = 0; bit < 32; ++bit) {
    uint64_t reg = uint64_t{1} << bit;
    for (size_t i = 0; i < block; i += 8) reg = _mm_crc32_u64(reg, 0);
    basis[static_cast<size_t>(bit)] = static_cast<uint32_t>(reg);
  }
  ShiftTables shift{};
  for (size_t k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t reg = 0;
      for (size_t bit = 0; bit < 8; ++bit)
        if ((b >> bit) & 1u) reg ^= basis[8 * k + bit];
      shift[k][b] = reg;
    }
  }
  return shift;
}

uint32_t ShiftOverBlock(const ShiftTables& shift, uint32_t reg) {
  return shift[0][reg & 0xff] ^ shift[1][(reg >> 8) & 0xff] ^ shift[2][(reg >> 16) & 0xff] ^
         shift[3][reg >> 24];
}

__attribute__((target("sse4.2"))) uint64_t Load(const unsigned char* p) {
  uint64_t word;
  std::memcpy(&word, p, 8);
  return word;
}

/// Extends the register `c` over the whole runs of three `block`-byte blocks at *p, three
/// streams at a time, and moves *p and *n past them.
__attribute__((target("sse4.2"))) uint32_t ExtendThreeStreams(uint32_t c, const unsigned char** p, size_t* n,
                                                              size_t block, const ShiftTables& shift) {
  for (; *n >= 3 * block; *n -= 3 * block, *p += 3 * block) {
    uint64_t first = c;
    uint64_t second = 0;
    uint64_t third = 0;
    for (size_t i = 0; i < block; i += 8) {
      first = _mm_crc32_u64(first, Load(*p + i));
      second = _mm_crc32_u64(second, Load(*p + block + i));
      third = _mm_crc32_u64(third, Load(*p + 2 * block + i));
    }
    c = ShiftOverBlock(shift, static_cast<uint32_t>(first)) ^ static_cast<uint32_t>(second);
    c = ShiftOverBlock(shift, c) ^ static_cast<uint32_t>(third);
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t ExtendWithSse42(uint32_t crc, const unsigned char* p, size_t n) {
  static const ShiftTables long_shift = MakeShiftTables(kLongBlock);
  static const ShiftTables short_shift = MakeShiftTables(kShortBlock);
  uint32_t c = ~crc;
  for (; n > 0 && reinterpret_cast<uintptr_t>(p) % 8 != 0; --n) c = _mm_crc32_u8(c, *p++);
  c = ExtendThreeStreams(c, &p, &n, kLongBlock, long_shift);
  c = ExtendThreeStreams(c, &p, &n, kShortBlock, short_shift);
  uint64_t wide = c;
  for (; n >= 8; n -= 8, p += 8) wide = _mm_crc32_u64(wide, Load(p));
  c = static_cast<uint32_t>(wide);
  for (; n > 0; --n) c = _mm_crc32_u8(c, *p++);
  return ~c;
}
#endif

ExtendFunction ChooseExtend() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) return ExtendWithSse42;
#endif
  return ExtendWithTables;
}

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  static const ExtendFunction extend = ChooseExtend();
  return extend(crc, static_cast<const unsigned char*>(data), n);
}

}  // namespace est::crc32c
