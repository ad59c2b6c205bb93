// pto-isa's hand-synchronised top-k (its a2a3 topk kernel, the one its Perf-Sim TopkPerfSim
// tests run), ported instruction for instruction so the two simulators price the same
// sequence. One AIV takes the rows two at a time, alternating two buffer sets (cur 0 / 1):
//   load   two rows of src into the set's src tile (MTE2);
//   sort   TSORT32 per row: (value, index) pairs, sorted descending in runs of 32;
//   merge  per row, TMRGSORT over groups of four runs (64 -> 256 -> 1024 columns, each pass
//          into a scratch row and moved back), then the leftover runs merged two at a time
//          keeping only the first top-k pairs of each;
//   split  the first top-k pairs into values (every even column) and indices (every odd);
//   store  both (MTE3).
// Its two-source TMRGSORT with a scratch tile merges into the scratch and copies the result
// back over the first source in one instruction; here that is TMRGSORT into the scratch and a
// TMOV back, the same two steps. Its value split gathers from the whole merged row and keeps
// the first top-k; here the source is the first 2 top-k columns, the same pairs.
//
// args: src [rows, cols] fp32, idx [1, cols] uint32 (the index of each column), out [rows,
//       topk] fp32 (out), index [rows, topk] uint32 (out), then topk. rows % 4 == 0.
#include <algorithm>
#include <pypto/kernel.hpp>
#include <vector>

using namespace pypto;

namespace {

constexpr int kLoopRows = 2;  // rows per load (the original's SINGLE_LOOP_ROW)
constexpr int kEvenCols = 1;  // TGATHER mask pattern P0101: the values of (value, index) pairs
constexpr int kOddCols = 2;   // P1010: the indices

Tile vec_row(DType d, int64_t addr, int cols) { return Tile(Mem::Vec, d, 1, cols, addr); }
Tile f32_row(int64_t addr, int cols) { return vec_row(DType::FP32, addr, cols); }

// The original's UB plan (its InitBuffers, base address 0), for `cols` columns and `topk`.
struct Plan {
  int cols, topk;
  int pair_cols() const { return 2 * cols; }  // a sorted row: (value, index) pairs
  int64_t sorted_bytes() const { return int64_t{kLoopRows} * pair_cols() * 4; }
  int64_t sorted(int cur) const { return cur * sorted_bytes(); }
  int64_t merged(int cur) const { return 2 * sorted_bytes() + cur * sorted_bytes(); }
  int64_t index() const { return 4 * sorted_bytes(); }
  int64_t tmp(int cur) const { return index() + int64_t{cols} * 4 * (1 + 2 * cur); }
  int64_t values(int cur) const {
    return index() + int64_t{cols} * 4 * 5 + cur * kLoopRows * topk * 4;
  }
  int64_t indices(int cur) const { return values(2) + cur * kLoopRows * topk * 4; }
  int64_t src(int cur) const {
    return 6 * sorted_bytes() + int64_t{cols} * 4 * 5 + cur * kLoopRows * cols * 4;
  }
};

// The original's FillMrgArray: the run lengths left after the four-way passes, longest first.
std::vector<int> leftover_runs(int width, int block) {
  std::vector<int> runs;
  for (int len = block; len >= 64; len /= 4) {
    const int n = width / len;
    runs.insert(runs.end(), n, len);
    width -= n * len;
  }
  return runs;
}

// The original's SortTailBlock: each leftover run merged into the row's first top-k pairs.
void merge_leftovers(int64_t row, int width, int block, int keep, int64_t tmp) {
  const std::vector<int> runs = leftover_runs(width, block);
  int64_t merged = 0;
  for (size_t i = 0; i + 1 < runs.size(); ++i) {
    merged += runs[i];
    const int a = static_cast<int>(std::min<int64_t>(merged, keep));
    const int b = std::min(runs[i + 1], keep);
    TMRGSORT(f32_row(tmp, a + b), f32_row(row, a), f32_row(row + merged * 4, b), 0);
    TMOV(f32_row(row, a + b), f32_row(tmp, a + b));
    pipe_barrier(PIPE_V);
  }
}

// The original's MrgsortSingleRow: one TSORT32 row merged to its first `keep` pair columns.
void merge_row(int64_t dst, int64_t src, int width, int keep, int64_t tmp) {
  int block = 64;
  for (; block * 4 <= width; block *= 4) {
    const int cols = width / (block * 4) * (block * 4);
    TMRGSORT(f32_row(tmp, cols), f32_row(src, cols), block);
    pipe_barrier(PIPE_V);
    TMOV(f32_row(src, cols), f32_row(tmp, cols));
    pipe_barrier(PIPE_V);
  }
  if (block < width) merge_leftovers(src, width, block, keep, tmp);
  pipe_barrier(PIPE_V);
  TMOV(f32_row(dst, keep), f32_row(src, keep));
}

// The original's ProcessSingleRow: rows row0, row0 + 1 through buffer set `cur`.
void two_rows(const Plan& p, Tensor src, Tensor out, Tensor index, int64_t row0, int cur) {
  const int load = cur, store = cur;  // the original's loadEvent / storeEvent for this set
  wait_flag(PIPE_V, PIPE_MTE2, load);
  TLOAD(Tile(Mem::Vec, DType::FP32, kLoopRows, p.cols, p.src(cur)), src, row0, 0);
  set_flag(PIPE_MTE2, PIPE_V, cur);
  wait_flag(PIPE_MTE2, PIPE_V, cur);
  const Tile idx = vec_row(DType::UINT32, p.index(), p.cols);
  for (int r = 0; r < kLoopRows; ++r) {
    TSORT32(f32_row(p.sorted(cur) + r * p.pair_cols() * 4, p.pair_cols()),
            f32_row(p.src(cur) + r * p.cols * 4, p.cols), idx);
    pipe_barrier(PIPE_V);
  }
  set_flag(PIPE_V, PIPE_MTE2, load);
  pipe_barrier(PIPE_V);
  for (int r = 0; r < kLoopRows; ++r) {
    const int64_t at = r * p.pair_cols() * 4;
    merge_row(p.merged(cur) + at, p.sorted(cur) + at, p.pair_cols(), 2 * p.topk, p.tmp(cur));
  }
  pipe_barrier(PIPE_V);
  for (int r = 0; r < kLoopRows; ++r) {
    TGATHER(f32_row(p.values(cur) + r * p.topk * 4, p.topk),
            f32_row(p.merged(cur) + r * p.pair_cols() * 4, 2 * p.topk), kEvenCols);
  }
  set_flag(PIPE_V, PIPE_MTE3, store);
  pipe_barrier(PIPE_V);
  for (int r = 0; r < kLoopRows; ++r) {
    TGATHER(vec_row(DType::UINT32, p.indices(cur) + r * p.topk * 4, p.topk),
            vec_row(DType::UINT32, p.merged(cur) + r * p.pair_cols() * 4, 2 * p.topk), kOddCols);
  }
  set_flag(PIPE_V, PIPE_MTE3, store + 2);
  wait_flag(PIPE_V, PIPE_MTE3, store);
  TSTORE(out, row0, 0, Tile(Mem::Vec, DType::FP32, kLoopRows, p.topk, p.values(cur)));
  wait_flag(PIPE_V, PIPE_MTE3, store + 2);
  TSTORE(index, row0, 0, Tile(Mem::Vec, DType::UINT32, kLoopRows, p.topk, p.indices(cur)));
}

}  // namespace

extern "C" void kernel_entry(__gm__ int64_t* args) {
  const Tensor src = arg_tensor(args, 0), idx = arg_tensor(args, 1);
  const Tensor out = arg_tensor(args, 2), index = arg_tensor(args, 3);
  const Plan p{static_cast<int>(src.cols()), static_cast<int>(arg_i64(args, 4))};
  TLOAD(vec_row(DType::UINT32, p.index(), p.cols), idx, 0, 0);
  set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);  // both src buffers start free
  set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);
  for (int64_t row = 0; row < src.rows(); row += 2 * kLoopRows) {
    two_rows(p, src, out, index, row, 0);
    two_rows(p, src, out, index, row + kLoopRows, 1);
  }
  wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);
  wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);
}
