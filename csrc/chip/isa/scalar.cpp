// Scalar element access (pl.read / pl.write) on the SCALAR pipe: one element of a GM tensor
// or of an on-chip tile, indexed per dimension and bounds-checked.
#include <string>

#include "chip/isa/checks.hpp"
#include "chip/isa/elem.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

OpDesc scalar_op(bool gm) {
  OpDesc d;
  d.cls = OpClass::kScalarAccess;
  d.link = gm ? Link::kGmToUb : Link::kUbToUb;
  return d;
}

std::string index_text(const int64_t* idx, int32_t n) {
  std::string s = "[";
  for (int32_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

// Before a GM scalar access: the queued work is done first, but for a read of memory no op
// of the run writes (an input no other tensor of the run's table overlaps writably: a decode's
// sequence lengths, its block table), which no queued work can change.
void gm_barrier(const pypto_tensor* t, bool write) {
  CoreContext& core = current_core();
  if (core.data == nullptr || core.deferring || !core.data->pending()) return;
  ChipLink* chip = core.model.chip();
  if (!write && t != nullptr && t->index >= 0 && chip != nullptr && chip->unwritten(t->index))
    return;
  core.data->drain();
}

// The byte address of element idx of tensor t, checked.
uint8_t* tensor_element(const pypto_tensor* t, const int64_t* idx, int32_t n, const char* op,
                        bool write) {
  gm_barrier(t, write);
  if (t == nullptr) fail(ErrorKind::kInternal, op, "null GM tensor");
  if (n != t->ndim) {
    fail(ErrorKind::kShape, op,
         "index " + index_text(idx, n) + " has " + std::to_string(n) + " entries for a rank-" +
             std::to_string(t->ndim) + " tensor");
  }
  int64_t off = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (idx[i] < 0 || idx[i] >= t->shape[i]) {
      fail(ErrorKind::kOutOfBounds, op,
           "index " + index_text(idx, n) + " is outside the tensor's shape " +
               index_text(t->shape, t->ndim));
    }
    off += idx[i] * t->strides[i];
  }
  return static_cast<uint8_t*>(t->data) + off * static_cast<int64_t>(dtype_size(t->dtype));
}

uint8_t* tile_element(const TileView& v, const int64_t* idx, int32_t n, const char* op) {
  const int64_t r = n == 2 ? idx[0] : 0, c = idx[n - 1];
  if ((n != 1 && n != 2) || r < 0 || r >= v.valid_rows || c < 0 || c >= v.valid_cols) {
    fail(ErrorKind::kOutOfBounds, op,
         "index " + index_text(idx, n) + " is outside the tile's valid shape " +
             shape_text(v.valid_rows, v.valid_cols));
  }
  return v.row(r) + c * v.esize;
}

void issue_scalar(const char* op, int mem, const uint8_t* p, int64_t addr, int64_t esize,
                  bool write) {
  AccessList acc;
  acc.add(Access{mem, addr, 1, esize, esize, write});
  issue_op(PYPTO_SCALAR, scalar_op(mem == PYPTO_GM), op, acc, static_cast<uint64_t>(esize), addr);
  (void)p;
}

int64_t gm_addr(const uint8_t* p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

}  // namespace

extern "C" double pypto_tensor_read(const pypto_tensor* t, const int64_t* idx, int32_t n) {
  uint8_t* p = tensor_element(t, idx, n, "TREAD", false);
  double v = load_f64(t->dtype, p);
  issue_scalar("TREAD", PYPTO_GM, p, gm_addr(p), static_cast<int64_t>(dtype_size(t->dtype)), false);
  return v;
}

extern "C" void pypto_tensor_write(const pypto_tensor* t, const int64_t* idx, int32_t n, double v) {
  // Checked before the address is formed: a read-only memory map faults on the store.
  check_writable(t, "TWRITE");
  uint8_t* p = tensor_element(t, idx, n, "TWRITE", true);
  store_f64(t->dtype, p, v);
  issue_scalar("TWRITE", PYPTO_GM, p, gm_addr(p), static_cast<int64_t>(dtype_size(t->dtype)), true);
}

extern "C" double pypto_tile_read(const pypto_tile* t, const int64_t* idx, int32_t n) {
  TileView v = check_tile(t, "TREAD", "tile", mem_bit(PYPTO_VEC));
  uint8_t* p = tile_element(v, idx, n, "TREAD");
  double x = load_f64(v.dtype, p);
  issue_scalar("TREAD", v.mem, p, v.addr + (p - v.data), v.esize, false);
  return x;
}

extern "C" void pypto_tile_write(const pypto_tile* t, const int64_t* idx, int32_t n, double x) {
  TileView v = check_tile(t, "TWRITE", "tile", mem_bit(PYPTO_VEC));
  uint8_t* p = tile_element(v, idx, n, "TWRITE");
  store_f64(v.dtype, p, x);
  issue_scalar("TWRITE", v.mem, p, v.addr + (p - v.data), v.esize, true);
}
