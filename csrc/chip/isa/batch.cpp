// Rank-3 (batched) transfers: the window [b0, b0 + B) x [row0, row0 + R) x [col0, col0 + C)
// of a 3-D GM tensor and a tile stacking its B [R, C] matrices by rows (rows [b*R, (b+1)*R)
// hold batch b). Each batch moves as one 2-D TLOAD / TSTORE of its matrix, so each is one
// DMA on MTE2 / MTE3 (FIXPIPE out of Acc), costed as the 2-D transfer of that size.
#include <string>

#include "chip/isa/checks.hpp"
#include "chip/isa/dtype.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

// a + b without wrapping (a window end compared with a dim, and shown in the message).
int64_t end_of(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

std::string dims_text(const int64_t* d) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
         "]";
}

// The rows of one batch; refuses a tensor that is not 3-D and a window outside it.
int64_t batch_rows(const pypto_tensor* t, const pypto_tile* tile, int64_t b0, int64_t row0,
                   int64_t col0, int32_t batches, const char* op) {
  if (t == nullptr || t->data == nullptr) fail(ErrorKind::kOutOfBounds, op, "null GM tensor");
  if (tile == nullptr) fail(ErrorKind::kShape, op, "null tile");
  if (t->ndim != 3) {
    fail(ErrorKind::kShape, op,
         "a batched window needs a 3-D GM tensor, got " + std::to_string(t->ndim) + "-D");
  }
  if (batches < 1 || tile->rows % batches != 0) {
    fail(ErrorKind::kShape, op,
         "a tile of " + std::to_string(tile->rows) + " rows does not stack " +
             std::to_string(batches) + " equal batches");
  }
  const int64_t rows = tile->rows / batches, cols = tile->valid_cols;
  const int64_t lo[3] = {b0, row0, col0},
                hi[3] = {end_of(b0, batches), end_of(row0, rows), end_of(col0, cols)};
  for (int i = 0; i < 3; ++i) {
    if (lo[i] < 0 || hi[i] > t->shape[i]) {
      fail(ErrorKind::kOutOfBounds, op,
           "GM window " + dims_text(lo) + " to " + dims_text(hi) +
               " is outside the tensor of shape " + dims_text(t->shape));
    }
  }
  return rows;
}

// Batch b of a 3-D tensor as a 2-D tensor (its last two dims).
pypto_tensor matrix_of(const pypto_tensor* t, int64_t b) {
  pypto_tensor m = *t;
  m.data = static_cast<uint8_t*>(t->data) +
           b * t->strides[0] * static_cast<int64_t>(dtype_size(t->dtype));
  m.ndim = 2;
  m.shape[0] = t->shape[1];
  m.shape[1] = t->shape[2];
  m.strides[0] = t->strides[1];
  m.strides[1] = t->strides[2];
  return m;
}

// Rows [b*rows, (b+1)*rows) of a stacked tile, sharing its storage.
pypto_tile rows_of(const pypto_tile* t, int64_t b, int64_t rows) {
  pypto_tile w = *t;
  w.addr += b * rows * t->cols * static_cast<int64_t>(dtype_size(t->dtype));
  w.rows = static_cast<int32_t>(rows);
  w.valid_rows = static_cast<int32_t>(rows);
  return w;
}

}  // namespace

extern "C" void pypto_tload_batch(const pypto_tile* dst, const pypto_tensor* src, int64_t b0,
                                  int64_t row0, int64_t col0, int32_t batches) {
  const int64_t rows = batch_rows(src, dst, b0, row0, col0, batches, "TLOAD");
  for (int64_t b = 0; b < batches; ++b) {
    const pypto_tensor m = matrix_of(src, b0 + b);
    const pypto_tile w = rows_of(dst, b, rows);
    pypto_tload(&w, &m, row0, col0);
  }
}

extern "C" void pypto_tstore_batch(const pypto_tensor* dst, int64_t b0, int64_t row0, int64_t col0,
                                   const pypto_tile* src, int32_t batches, int32_t atomic_add) {
  const int64_t rows =
      batch_rows(dst, src, b0, row0, col0, batches, atomic_add ? "TSTORE.atomic_add" : "TSTORE");
  for (int64_t b = 0; b < batches; ++b) {
    const pypto_tensor m = matrix_of(dst, b0 + b);
    const pypto_tile w = rows_of(src, b, rows);
    pypto_tstore(&m, row0, col0, &w, atomic_add);
  }
}
