// See crc32.hpp.
//
// Reflected CRC arithmetic: a 16-byte block, loaded little-endian into a 128-bit register,
// holds a polynomial whose x^127 coefficient is bit 0 (the first byte's lowest bit) and whose
// x^0 is bit 127. A message M with N bits after a block A is M = A x^N + rest, and its CRC
// (before the final inversion) is M x^32 mod P; the register's initial value enters as an XOR
// into the message's first 32 bits. Folding A forward by F bits replaces it, F bits later,
// with A' = A x^F mod P, any polynomial of degree < 128 congruent to it: with H the low 64-bit
// half (the coefficients of x^127..x^64) and L the high one (x^63..x^0),
//   A x^F = H x^(F+64) + L x^F = H (x^32 (x^(F+32) mod P)) + L (x^32 (x^(F-32) mod P)) (mod P).
// A carry-less product of 64-bit reflected values a (bit i: x^(63-i)) and k is a reflected
// value whose bit i+j is the product of a's bit i and k's bit j; for it to land in a block's
// frame (bit t: x^(127-t)), k's bit j must stand for x^(64-j). x^32 (x^e mod P) has degree
// 32..63, so its bits are 1..32: the 32-bit reflection of x^e mod P shifted left by one. Hence
// the constants below, each computed here from the polynomial (and checked against the values
// Intel's white paper "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ" lists
// for this polynomial). After the last fold the 128-bit block, stored back as 16 bytes, is a
// message congruent to everything read so far: its CRC from a zero register, by the table, is
// the running CRC, and the table takes the last bytes from there.
#include "tools/crc32.hpp"

#include <immintrin.h>

#include <array>
#include <cstring>

namespace pypto::tools {
namespace {

constexpr uint64_t kPoly = 0x104C11DB7;  // x^32 + x^26 + ... + 1, not reflected

// x^e mod P, not reflected (bit d: x^d).
constexpr uint32_t xpow_mod(unsigned e) {
  uint64_t r = 1;
  for (unsigned i = 0; i < e; ++i) {
    r <<= 1;
    if (r >> 32) r ^= kPoly;
  }
  return static_cast<uint32_t>(r);
}

constexpr uint32_t reflect32(uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
  return r;
}

// The multiplier of a 64-bit half that stands for x^32 (x^e mod P) (see above).
constexpr uint64_t fold_constant(unsigned e) { return uint64_t{reflect32(xpow_mod(e))} << 1; }

// Folding a block forward by `bits`: `low` multiplies its low half (x^127..x^64), `high` its
// high half.
struct Fold {
  uint64_t low, high;
};
constexpr Fold fold_by(unsigned bits) {
  return {fold_constant(bits + 32), fold_constant(bits - 32)};
}

static_assert(fold_by(512).low == 0x154442bd4 && fold_by(512).high == 0x1c6e41596);
static_assert(fold_by(128).low == 0x1751997d0 && fold_by(128).high == 0x0ccaa009e);

// The reflected polynomial's byte tables for slicing by eight: kTable[0][b] is the CRC step of
// byte b, kTable[s][b] that of byte b followed by s zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    t[0][b] = c;
  }
  for (size_t s = 1; s < 8; ++s) {
    for (uint32_t b = 0; b < 256; ++b) t[s][b] = (t[s - 1][b] >> 8) ^ t[0][t[s - 1][b] & 0xFF];
  }
  return t;
}
constexpr auto kTable = make_tables();

// The register (not inverted) after `n` bytes at `p`, from register `r`.
uint32_t table_step(uint32_t r, const uint8_t* p, size_t n) {
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    v ^= r;
    r = kTable[7][v & 0xFF] ^ kTable[6][(v >> 8) & 0xFF] ^ kTable[5][(v >> 16) & 0xFF] ^
        kTable[4][(v >> 24) & 0xFF] ^ kTable[3][(v >> 32) & 0xFF] ^ kTable[2][(v >> 40) & 0xFF] ^
        kTable[1][(v >> 48) & 0xFF] ^ kTable[0][v >> 56];
  }
  for (; n > 0; ++p, --n) r = (r >> 8) ^ kTable[0][(r ^ *p) & 0xFF];
  return r;
}

// The block `x` folded forward by the distance of `k` (fold_by's halves, low in the low lane).
__attribute__((target("pclmul,sse2"))) inline __m128i fold16(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse2"))) inline __m128i constant16(Fold f) {
  return _mm_set_epi64x(static_cast<int64_t>(f.high), static_cast<int64_t>(f.low));
}

// The register after the 16-byte blocks from `p` on, the first one `x` (already read), with
// `n` bytes left after it: folded one block at a time, then the last block and the tail by
// the table.
__attribute__((target("pclmul,sse2"))) uint32_t finish16(__m128i x, const uint8_t* p, size_t n) {
  const __m128i k128 = constant16(fold_by(128));
  for (; n >= 16; p += 16, n -= 16) {
    x = _mm_xor_si128(fold16(x, k128), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  alignas(16) uint8_t block[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(block), x);
  return table_step(table_step(0, block, 16), p, n);
}

// The register after n >= 64 bytes, four blocks folded 512 bits at a time.
__attribute__((target("pclmul,sse2"))) uint32_t clmul_step(uint32_t r, const uint8_t* p, size_t n) {
  auto load = [](const uint8_t* at) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
  };
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(r)));
  __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
  p += 64;
  n -= 64;
  const __m128i k512 = constant16(fold_by(512));
  for (; n >= 64; p += 64, n -= 64) {
    x0 = _mm_xor_si128(fold16(x0, k512), load(p));
    x1 = _mm_xor_si128(fold16(x1, k512), load(p + 16));
    x2 = _mm_xor_si128(fold16(x2, k512), load(p + 32));
    x3 = _mm_xor_si128(fold16(x3, k512), load(p + 48));
  }
  const __m128i k128 = constant16(fold_by(128));
  __m128i x = _mm_xor_si128(fold16(x0, k128), x1);
  x = _mm_xor_si128(fold16(x, k128), x2);
  x = _mm_xor_si128(fold16(x, k128), x3);
  return finish16(x, p, n);
}

#define PYPTO_CRC_AVX512 __attribute__((target("vpclmulqdq,avx512f,pclmul,sse2")))

PYPTO_CRC_AVX512 inline __m512i fold64(__m512i x, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                          _mm512_clmulepi64_epi128(x, k, 0x11));
}

PYPTO_CRC_AVX512 inline __m512i load64(const uint8_t* at) { return _mm512_loadu_si512(at); }

PYPTO_CRC_AVX512 inline __m512i constant64(Fold f) {
  const auto low = static_cast<int64_t>(f.low), high = static_cast<int64_t>(f.high);
  return _mm512_set_epi64(high, low, high, low, high, low, high, low);
}

// The register after n >= 256 bytes, four 64-byte blocks (sixteen lanes) folded 2048 bits at a
// time, then one 64-byte block at a time, then the four lanes of the last one into one.
PYPTO_CRC_AVX512 uint32_t avx512_step(uint32_t r, const uint8_t* p, size_t n) {
  __m512i z0 =
      _mm512_xor_si512(load64(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(r))));
  __m512i z1 = load64(p + 64), z2 = load64(p + 128), z3 = load64(p + 192);
  p += 256;
  n -= 256;
  const __m512i k2048 = constant64(fold_by(2048));
  for (; n >= 256; p += 256, n -= 256) {
    z0 = _mm512_xor_si512(fold64(z0, k2048), load64(p));
    z1 = _mm512_xor_si512(fold64(z1, k2048), load64(p + 64));
    z2 = _mm512_xor_si512(fold64(z2, k2048), load64(p + 128));
    z3 = _mm512_xor_si512(fold64(z3, k2048), load64(p + 192));
  }
  const __m512i k512 = constant64(fold_by(512));
  __m512i z = _mm512_xor_si512(fold64(z0, k512), z1);
  z = _mm512_xor_si512(fold64(z, k512), z2);
  z = _mm512_xor_si512(fold64(z, k512), z3);
  for (; n >= 64; p += 64, n -= 64) z = _mm512_xor_si512(fold64(z, k512), load64(p));
  // Lane i is 3 - i blocks before the last one.
  alignas(64) uint8_t lanes[64];
  _mm512_store_si512(lanes, z);
  // The rest is 128-bit, ending in finish16's legacy-SSE code (shared with clmul_step), reached
  // by a jump with no vzeroupper on the way: with the 512-bit registers' upper halves marked
  // live, the thread ran every later SSE instruction with a merge penalty until other code
  // cleared the state (a million-instruction simulation after one records.npz on its thread:
  // 17 -> 150 ms). So the lanes go through memory (the barrier keeps the compiler from reading
  // them from a register past the vzeroupper, which would mark the halves live again).
  __asm__ volatile("" : : "r"(lanes) : "memory");
  _mm256_zeroupper();
  auto lane = [&lanes](int i) {
    return _mm_load_si128(reinterpret_cast<const __m128i*>(lanes + 16 * i));
  };
  __m128i x = _mm_xor_si128(fold16(lane(0), constant16(fold_by(384))),
                            fold16(lane(1), constant16(fold_by(256))));
  x = _mm_xor_si128(x, fold16(lane(2), constant16(fold_by(128))));
  x = _mm_xor_si128(x, lane(3));
  return finish16(x, p, n);
}

enum class Kind { kTable, kClmul, kAvx512 };

Kind best_kind() {
  if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f"))
    return Kind::kAvx512;
  if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2")) return Kind::kClmul;
  return Kind::kTable;
}

}  // namespace

uint32_t crc32_table(uint32_t crc, const void* data, size_t n) {
  return ~table_step(~crc, static_cast<const uint8_t*>(data), n);
}

uint32_t crc32(uint32_t crc, const void* data, size_t n) {
  static const Kind kind = best_kind();
  const auto* p = static_cast<const uint8_t*>(data);
  const uint32_t r = ~crc;
  if (kind == Kind::kAvx512 && n >= 256) return ~avx512_step(r, p, n);
  if (kind != Kind::kTable && n >= 64) return ~clmul_step(r, p, n);
  return ~table_step(r, p, n);
}

}  // namespace pypto::tools
