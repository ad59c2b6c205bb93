// Blocked fp32 matmul for TMATMUL: R x C L output sums kept in vector registers (L lanes),
// compiled three times — AVX-512, AVX2 and the baseline — from one template.
#include "chip/isa/matmul_f32.hpp"

#include <cstring>
#include <stdexcept>

namespace pypto::vm {
namespace {

using v4 = float __attribute__((vector_size(16)));
using v8 = float __attribute__((vector_size(32)));
using v16 = float __attribute__((vector_size(64)));

// The vector of half V's lanes: a block's columns narrower than V are summed in it.
template <typename V>
struct Half;
template <>
struct Half<v16> {
  using type = v8;
};
template <>
struct Half<v8> {
  using type = v4;
};

#define PYPTO_INLINE inline __attribute__((always_inline))

// By reference, not by value: a vector in a return slot would be an ISA-dependent ABI (-Wpsabi).
template <typename V>
PYPTO_INLINE void load(V& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}

// Output rows [R, C L] (+)= A[R, k] x B[k, C L]. The sums start at 0 and run in k order; `a * b`
// then `+=` are two roundings (the build disables FP contraction), as in a plain k loop.
template <typename V, int R, int C>
PYPTO_INLINE void block(const float* A, int64_t k, const float* B, int64_t n, float* Cm,
                        int64_t ldc, bool accumulate) {
  constexpr int L = sizeof(V) / sizeof(float);
  // The block's outputs are touched only after the k loop; the accumulator they live in is
  // seldom in the host's caches (a simulated chip's cores take turns, each with its own), so
  // their lines are asked for now and arrive while the sums run. A hint: no value changes.
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < C; ++j) __builtin_prefetch(Cm + r * ldc + j * L, 1, 3);
  V s[R][C] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
    V b[C];
    for (int j = 0; j < C; ++j) load(b[j], B + kk * n + j * L);
    for (int r = 0; r < R; ++r) {
      const float a = A[r * k + kk];
      for (int j = 0; j < C; ++j) s[r][j] += a * b[j];
    }
  }
  for (int r = 0; r < R; ++r) {
    float* c = Cm + r * ldc;
    for (int j = 0; j < C; ++j) {
      if (accumulate) {  // out + sum: addition commutes exactly
        V old;
        load(old, c + j * L);
        s[r][j] += old;
      }
      std::memcpy(c + j * L, &s[r][j], sizeof(V));
    }
  }
}

// One output column of R rows, for the columns left over after the vector blocks.
template <int R>
PYPTO_INLINE void column(const float* A, int64_t k, const float* B, int64_t n, float* C,
                         int64_t ldc, bool accumulate) {
  for (int r = 0; r < R; ++r) {
    float sum = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) sum += A[r * k + kk] * B[kk * n];
    C[r * ldc] = accumulate ? C[r * ldc] + sum : sum;
  }
}

// Columns [j, n) of R output rows in blocks of one V, then of narrower vectors (down to 4
// lanes), then single columns. A tile of 16 or 48 columns had summed 16 columns one at a time:
// ~4.5 and ~11 GFLOP/s on a 64 x 128 tile, against ~100 at 32 or 64 (AVX-512).
template <typename V, int R>
PYPTO_INLINE void narrow(const float* A, int64_t k, const float* B, int64_t n, float* Cm,
                         int64_t ldc, bool accumulate, int64_t j) {
  constexpr int L = sizeof(V) / sizeof(float);
  for (; j + L <= n; j += L) block<V, R, 1>(A, k, B + j, n, Cm + j, ldc, accumulate);
  if constexpr (L > 4) {
    narrow<typename Half<V>::type, R>(A, k, B, n, Cm, ldc, accumulate, j);
  } else {
    for (; j < n; ++j) column<R>(A, k, B + j, n, Cm + j, ldc, accumulate);
  }
}

// Columns [j, n) of R output rows: blocks of C vectors while they fit, then of 2, then the
// narrow ones.
template <typename V, int R, int C>
PYPTO_INLINE void rows(const float* A, int64_t k, const float* B, int64_t n, float* Cm, int64_t ldc,
                       bool accumulate, int64_t j = 0) {
  constexpr int L = sizeof(V) / sizeof(float);
  for (; j + C * L <= n; j += C * L) block<V, R, C>(A, k, B + j, n, Cm + j, ldc, accumulate);
  for (; j + 2 * L <= n; j += 2 * L) block<V, R, 2>(A, k, B + j, n, Cm + j, ldc, accumulate);
  narrow<V, R>(A, k, B, n, Cm, ldc, accumulate, j);
}

// One C (+)= A x B (see matmul_f32).
struct Gemm {
  const float* A;
  const float* B;
  float* C;
  int64_t ldc, m, k, n;
  bool accumulate;
};

// R rows x C vectors at a time: R C vector sums stay in registers, so each loaded B vector
// feeds R products and each broadcast A value C. Panel by panel of C vectors' columns: a
// panel of B (k x C L floats: 8 KiB for the fused AVX-512 8 x 2 form at k = 64, 16 KiB for
// its 6 x 4) stays in L1 while every
// row block uses it, rather than all of B streaming from L2 once per row block. The blocking
// only changes which sums run side by side, never one sum's order.
template <typename V, int R, int C>
PYPTO_INLINE void blocked(const Gemm& g) {
  constexpr int L = sizeof(V) / sizeof(float);
  const float *A = g.A, *B = g.B;
  float* Cm = g.C;
  const int64_t ldc = g.ldc, m = g.m, k = g.k, n = g.n;
  const bool acc = g.accumulate;
  const int64_t m_blocks = m - m % R;
  int64_t j = 0;
  for (; j + C * L <= n; j += C * L) {
    for (int64_t i = 0; i < m_blocks; i += R)
      block<V, R, C>(A + i * k, k, B + j, n, Cm + i * ldc + j, ldc, acc);
  }
  for (int64_t i = 0; i < m_blocks; i += R)
    rows<V, R, C>(A + i * k, k, B, n, Cm + i * ldc, ldc, acc, j);
  int64_t i = m_blocks;
  for (; i + 4 <= m; i += 4) rows<V, 4, 2>(A + i * k, k, B, n, Cm + i * ldc, ldc, acc);
  for (; i < m; ++i) rows<V, 1, 2>(A + i * k, k, B, n, Cm + i * ldc, ldc, acc);
}

// AVX-512 has 32 vector registers: 6 rows x 4 vectors of sums, 4 of B, 1 broadcast (measured
// ~15% faster than 8 x 2 on a 128 x 256 x 128 tile).
__attribute__((target("avx512f"))) void matmul_avx512(const Gemm& g) { blocked<v16, 6, 4>(g); }

// AVX2 has 16: 4 rows x 2 vectors of sums, 2 of B, 1 broadcast.
__attribute__((target("avx2"))) void matmul_avx2(const Gemm& g) { blocked<v8, 4, 2>(g); }

// Without AVX the compiler has 16-byte vectors (SSE2, NEON): 8-lane ones it summed element by
// element, ~2 GFLOP/s against ~31 for 4-lane blocks on a 64 x 128 x 32 tile.
void matmul_baseline(const Gemm& g) { blocked<v4, 4, 2>(g); }

// The fused forms, for exact products only: there `s + a * b` rounds once whether or not the
// multiply is fused into the add, so FMA gives the same bits with half the arithmetic
// instructions. The build keeps contraction off; these two functions turn it back on (GCC),
// and the compiler then fuses the kernel's `s += a * b`. 8 x 2 sums measured ~25% faster than
// the unfused 6 x 4 on a 64 x 128 x 128 tile (FMA keeps both multiply pipes busy on the sums).
// On AVX2, 6 x 2 sums (15 of the 16 registers) hide the FMA latency better than 4 x 2: ~10%
// faster on a 64 x 128 x 128 tile, near the two-FMA-per-cycle peak.
#if defined(__GNUC__) && !defined(__clang__)
#define PYPTO_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define PYPTO_CONTRACT
#endif

// Once the output has a 64-column panel, 6 x 4 sums take over: 10 loads per 24 FMAs rather than
// 10 per 16, which the short k of the GEMM's base block (k = 64, accumulating, a 64-column
// piece) needs most: 128 x 64 x 64 ~106 -> ~117 GFLOP/s, 64 x 128 x 64 ~116 -> ~130 in cache
// (best of 6, one host core). A 32-column piece (FlashAttention's) keeps 8 x 2: ~134 against
// ~129 for 6 x 2.
__attribute__((target("avx512f"))) PYPTO_CONTRACT void matmul_avx512_fused(const Gemm& g) {
  if (g.n >= 64) {
    blocked<v16, 6, 4>(g);
  } else {
    blocked<v16, 8, 2>(g);
  }
}

__attribute__((target("avx2,fma"))) PYPTO_CONTRACT void matmul_avx2_fused(const Gemm& g) {
  blocked<v8, 6, 2>(g);
}

using Kernel = void (*)(const Gemm&);

struct Form {
  const char* name;
  Kernel kernel, fused;  // fused: the kernel for exact products
  bool (*runs_here)();
};

// Every CPU with AVX2 but one VIA part also has FMA; the AVX2 form asks for both.
const Form kForms[] = {
    {"avx512f", matmul_avx512, matmul_avx512_fused,
     [] { return __builtin_cpu_supports("avx512f") != 0; }},
    {"avx2", matmul_avx2, matmul_avx2_fused,
     [] { return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0; }},
    {"baseline", matmul_baseline, matmul_baseline, [] { return true; }},
};

const Form& pick() {
  for (const Form& f : kForms)
    if (f.runs_here()) return f;
  return kForms[2];
}

}  // namespace

void matmul_f32(const float* A, const float* B, float* C, int64_t ldc, int64_t m, int64_t k,
                int64_t n, bool accumulate, bool exact_products) {
  static const Form& form = pick();
  (exact_products ? form.fused : form.kernel)({A, B, C, ldc, m, k, n, accumulate});
}

std::vector<std::string> matmul_f32_forms() {
  std::vector<std::string> out;
  for (const Form& f : kForms)
    if (f.runs_here()) out.emplace_back(f.name);
  return out;
}

void matmul_f32_form(const std::string& form, const float* A, const float* B, float* C, int64_t ldc,
                     int64_t m, int64_t k, int64_t n, bool accumulate, bool exact_products) {
  for (const Form& f : kForms) {
    if (form == f.name && f.runs_here()) {
      return (exact_products ? f.fused : f.kernel)({A, B, C, ldc, m, k, n, accumulate});
    }
  }
  throw std::invalid_argument("no matmul form '" + form + "' on this CPU");
}

}  // namespace pypto::vm
