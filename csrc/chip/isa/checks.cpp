#include "chip/isa/checks.hpp"

#include <atomic>

#include "chip/isa/dtype.hpp"

namespace pypto::isa {

std::string shape_text(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

void fail(ErrorKind kind, const char* op, const std::string& message) {
  const char* loc = current_core().loc;
  throw SimError(kind,
                 std::string(op) + ": " + message + (loc[0] ? std::string(" at ") + loc : ""));
}

Access GmWindow::access(bool write) const {
  return {PYPTO_GM,     static_cast<int64_t>(reinterpret_cast<intptr_t>(data)),
          rows,         row_bytes,
          stride_bytes, write};
}

namespace {

// a + b for the text of an error message: saturates instead of wrapping.
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

}  // namespace

std::atomic<const char*> g_last_op{""}, g_last_loc{""};

const char* last_instruction_op() { return g_last_op.load(std::memory_order_relaxed); }
const char* last_instruction_loc() { return g_last_loc.load(std::memory_order_relaxed); }

namespace {

// Why `t` is not a usable tile of `spaces` on `core` (the slow path of check_tile).
[[noreturn]] void refuse_tile(const CoreContext& core, const pypto_tile* t, const char* op,
                              const char* operand, unsigned spaces) {
  const std::string who = std::string("operand '") + operand + "'";
  if (t == nullptr) fail(ErrorKind::kInternal, op, who + " is a null tile");
  if (t->mem <= PYPTO_GM || t->mem >= PYPTO_NUM_MEM || !(spaces & mem_bit(t->mem))) {
    fail(ErrorKind::kMemorySpace, op,
         who + " is in memory space " + mem_name(t->mem) + ", which this instruction cannot use");
  }
  if (!hw::on_core(core.aic, t->mem)) {
    fail(ErrorKind::kMemorySpace, op,
         who + " is in " + mem_name(t->mem) + ", which an " + (core.aic ? "AIC" : "AIV") +
             " core does not have (" +
             (core.aic ? "UB (Vec) is the AIV's: run the kernel on an AIV core, core=\"aiv\""
                       : "L1 and L0 are the AIC's, beside its cube: run the kernel on an AIC "
                         "core, core=\"aic\"") +
             ")");
  }
  if (t->dtype < 0 || t->dtype >= PYPTO_NUM_DTYPES)
    fail(ErrorKind::kDType, op, who + " has an unknown dtype");
  if (t->rows <= 0 || t->cols <= 0 || t->valid_rows < 0 || t->valid_cols < 0 ||
      t->valid_rows > t->rows || t->valid_cols > t->cols) {
    fail(ErrorKind::kShape, op,
         who + " has shape " + shape_text(t->rows, t->cols) + " with valid shape " +
             shape_text(t->valid_rows, t->valid_cols));
  }
  const int64_t cap = core.capacity(t->mem);
  int64_t bytes = 0;
  if (__builtin_mul_overflow(int64_t{t->rows} * t->cols, dtype_size(t->dtype), &bytes)) {
    bytes = INT64_MAX;
  }
  if (bytes > cap || t->addr < 0 || t->addr > cap - bytes) {
    fail(ErrorKind::kMemorySpace, op,
         who + " " + dtype_name(t->dtype) + shape_text(t->rows, t->cols) + " at " +
             mem_name(t->mem) + " [" + std::to_string(t->addr) + ", " +
             std::to_string(sat_add(t->addr, bytes)) + ") lies outside " + mem_name(t->mem) +
             " (capacity " + std::to_string(cap) + " B)");
  }
  fail(ErrorKind::kMemorySpace, op,
       who + " address " + std::to_string(t->addr) + " in " + mem_name(t->mem) + " is not " +
           std::to_string(core.platform.alignment_bytes) + "-byte aligned");
}

}  // namespace

TileView check_touched_tile(CoreContext& core, const pypto_tile* t, const char* op,
                            const char* operand, unsigned spaces) {
  const CoreContext::CheckedTile& seen = core.checked[checked_slot(t)];
  const TileView v = t != nullptr && checked_as(seen, t, spaces)
                         ? seen.view
                         : check_tile_again(core, t, op, operand, spaces);
  if (core.data->before_write(v.data, v.data + v.rows * v.cols * v.esize) && !core.deferring) {
    core.data->drain();
  }
  return v;
}

TileView check_tile_again(CoreContext& core, const pypto_tile* t, const char* op,
                          const char* operand, unsigned spaces) {
  const CoreContext::CheckedTile& before = core.checked_before[checked_slot(t)];
  if (t != nullptr && checked_as(before, t, spaces)) return before.view;
  return check_tile_fully(t, op, operand, spaces);
}

// One pass of cheap tests; the message is built only when one fails (refuse_tile re-derives
// which). The slot's descriptor it replaces becomes the slot's one before.
TileView check_tile_fully(const pypto_tile* t, const char* op, const char* operand,
                          unsigned spaces) {
  CoreContext& core = current_core();
  CoreContext::CheckedTile& seen = core.checked[checked_slot(t)];
  bool ok = t != nullptr && t->mem > PYPTO_GM && t->mem < PYPTO_NUM_MEM &&
            (spaces & mem_bit(t->mem)) && hw::on_core(core.aic, t->mem) && t->dtype >= 0 &&
            t->dtype < PYPTO_NUM_DTYPES && t->rows > 0 && t->cols > 0 && t->valid_rows >= 0 &&
            t->valid_cols >= 0 && t->valid_rows <= t->rows && t->valid_cols <= t->cols;
  // rows, cols < 2^31 and esize <= 8: the bytes can pass 2^63, so the product is checked,
  // and the end address is compared as `addr > cap - bytes`, which cannot wrap.
  const int64_t esize = ok ? static_cast<int64_t>(dtype_size(t->dtype)) : 0;
  int64_t bytes = 0;
  if (ok) {
    const int64_t cap = core.capacity(t->mem);
    const int64_t align = core.platform.alignment_bytes;
    ok = !__builtin_mul_overflow(int64_t{t->rows} * t->cols, esize, &bytes) && bytes <= cap &&
         t->addr >= 0 && t->addr <= cap - bytes && (align <= 1 || t->addr % align == 0);
  }
  if (!ok) refuse_tile(core, t, op, operand, spaces);
  if (!checked_as(seen, t, spaces)) core.checked_before[checked_slot(t)] = seen;
  seen.desc = *t;
  seen.view = {core.space_data(t->mem) + t->addr,
               esize,
               t->rows,
               t->cols,
               t->valid_rows,
               t->valid_cols,
               t->dtype,
               t->mem,
               t->addr};
  return seen.view;
}

namespace {

// A descriptor the runtime did not build can claim anything: refuse what cannot be a real
// array before any address arithmetic uses it.
void check_descriptor(const pypto_tensor* t, int64_t rows, int64_t cols, int64_t row_stride,
                      int64_t esize, const char* op) {
  if (rows < 0 || cols < 0 || row_stride < 0) {
    fail(ErrorKind::kShape, op,
         "GM tensor has shape " + shape_text(rows, cols) + " and row stride " +
             std::to_string(row_stride) + "; negative sizes and strides are invalid");
  }
  int64_t span = 0;
  if (rows > 0 &&
      (__builtin_mul_overflow(rows - 1, row_stride, &span) ||
       __builtin_add_overflow(span, cols, &span) || __builtin_mul_overflow(span, esize, &span))) {
    fail(ErrorKind::kShape, op,
         "GM tensor of shape " + shape_text(rows, cols) + " and row stride " +
             std::to_string(row_stride) + " spans more bytes than an address holds");
  }
  (void)t;
}

}  // namespace

GmWindow check_window(const pypto_tensor* t, int64_t row0, int64_t col0, const TileView& tile,
                      const char* op) {
  data_barrier(current_core());
  if (t == nullptr || t->data == nullptr) fail(ErrorKind::kOutOfBounds, op, "null GM tensor");
  if (t->ndim < 1 || t->ndim > 2) {
    fail(ErrorKind::kShape, op,
         "GM tensors must be 1-D or 2-D here, got " + std::to_string(t->ndim) + "-D");
  }
  int64_t rows = t->ndim == 2 ? t->shape[0] : 1, cols = t->shape[t->ndim - 1];
  int64_t col_stride = t->strides[t->ndim - 1], row_stride = t->ndim == 2 ? t->strides[0] : cols;
  if (t->dtype != tile.dtype) {
    fail(ErrorKind::kDType, op,
         std::string("tensor dtype ") + dtype_name(t->dtype) + " differs from tile dtype " +
             dtype_name(tile.dtype) + " (transfers do not convert; use TCVT)");
  }
  if (col_stride != 1) fail(ErrorKind::kShape, op, "GM tensor's innermost stride must be 1");
  check_descriptor(t, rows, cols, row_stride, tile.esize, op);
  // rows, cols, valid_rows, valid_cols >= 0: the subtractions cannot wrap.
  if (row0 < 0 || col0 < 0 || row0 > rows - tile.valid_rows || col0 > cols - tile.valid_cols) {
    fail(ErrorKind::kOutOfBounds, op,
         "GM window rows [" + std::to_string(row0) + ", " +
             std::to_string(sat_add(row0, tile.valid_rows)) + ") x cols [" + std::to_string(col0) +
             ", " + std::to_string(sat_add(col0, tile.valid_cols)) +
             ") is outside the tensor of shape " + shape_text(rows, cols));
  }
  uint8_t* base = static_cast<uint8_t*>(t->data) + (row0 * row_stride + col0) * tile.esize;
  return {base, tile.valid_rows, tile.valid_cols * tile.esize, row_stride * tile.esize};
}

void check_writable(const pypto_tensor* t, const char* op) {
  if (t == nullptr || (t->flags & (PYPTO_TENSOR_INPUT | PYPTO_TENSOR_READONLY)) == 0) return;
  const std::string which = "tensor #" + std::to_string(t->index);
  if (t->flags & PYPTO_TENSOR_INPUT) {
    fail(ErrorKind::kReadOnly, op,
         "writes into " + which +
             ", an input of the kernel; inputs are read-only (declare the parameter "
             "pl.Out/pl.InOut, or list it in outputs=)");
  }
  fail(ErrorKind::kReadOnly, op,
       "writes into " + which +
           ", whose memory is read-only (a read-only array or memory map); pass a writable array");
}

void refuse_dtypes(const TileView& a, const TileView& b, const char* op, const char* what) {
  fail(ErrorKind::kDType, op,
       std::string(what) + ": dtypes differ (" + dtype_name(a.dtype) + " vs " +
           dtype_name(b.dtype) + ")");
}

void refuse_shapes(const TileView& a, const TileView& b, const char* op, const char* what) {
  fail(ErrorKind::kShape, op,
       std::string(what) + ": shapes differ (" + shape_text(a.valid_rows, a.valid_cols) + " vs " +
           shape_text(b.valid_rows, b.valid_cols) + ")");
}

void check_elementwise(const TileView& dst, const TileView& a, const TileView* b, const char* op) {
  if (b != nullptr) check_same_dtype(a, *b, op, "a and b");
  check_same_dtype(dst, a, op, "dst and a");
  if (b != nullptr) check_same_valid_shape(a, *b, op, "a and b");
  check_same_valid_shape(dst, a, op, "dst and a");
}

const OneInputOperands& check_one_input_again(CoreContext& core, int32_t code,
                                              const pypto_tile* dst, const pypto_tile* a,
                                              const char* op, bool (*supported)(int, int)) {
  OneInputOperands& m = core.one_input[one_input_slot(code, dst)];
  m.op = -1;  // kept only once every check has passed
  const TileView d = check_next_tile(core, dst, op, "dst", mem_bit(PYPTO_VEC));
  const TileView x = check_input_a(core, a, d, op);
  check_supported(supported(code % 16, d.dtype), op, d.dtype);
  m.dst = dst;
  m.a = a;
  m.dst_desc = *dst;
  m.a_desc = *a;
  m.d = d;
  m.x = x;
  m.bytes = d.valid_bytes();
  m.accesses = AccessList{};
  m.accesses.add(x.access(false));
  m.accesses.add(d.access(true));
  m.op = code;
  return m;
}

void refuse_dtype(const char* op, int dtype) {
  fail(ErrorKind::kDType, op, std::string("dtype ") + dtype_name(dtype) + " is not supported");
}

OpDesc vector_op(VecClass c, int64_t bytes) {
  OpDesc d;
  d.cls = OpClass::kVector;
  d.vec = c;
  d.bytes = bytes;
  return d;
}

OpDesc gm_op(OpClass c, Link link, int64_t rows, int64_t row_bytes) {
  OpDesc d;
  d.cls = c;
  d.link = link;
  d.rows = rows;
  d.row_bytes = row_bytes;
  d.bytes = rows * row_bytes;
  return d;
}

OpDesc mad_op(int64_t m, int64_t k, int64_t n, int64_t in_esize) {
  OpDesc d;
  d.cls = OpClass::kMatmul;
  d.m = m, d.k = k, d.n = n, d.in_esize = in_esize;
  return d;
}

OpDesc l1_to_l0a_op(int64_t bytes) {
  OpDesc d;
  d.cls = OpClass::kLocalMove;
  d.link = Link::kL1ToL0a;
  d.bytes = bytes;
  return d;
}

void issue_op(int pipe, const OpDesc& op, const char* name, const AccessList& accesses,
              uint64_t bytes, int64_t addr, uint64_t not_before, uint64_t* publish_end,
              PipeRoute route, Instr::Hold hold) {
  CoreContext& core = current_core();
  Instr in;
  in.kind = InstrKind::kOp;
  in.pipe = pipe;
  in.flag_src = route.from;
  in.flag_dst = route.to;
  in.flag_id = route.id;
  in.op = op;
  in.name = name;
  in.loc = core.loc;
  in.bytes = bytes;
  in.addr = addr;
  in.accesses = accesses;
  in.not_before = not_before;
  in.publish_end = publish_end;
  in.hold = hold;
  core.model.issue(std::move(in));
}

void issue_row_op(const char* name, OpClass cls, const TileView& src, const TileView* scratch,
                  const TileView& dst, RowReduceKind reduce) {
  AccessList acc;
  acc.add(src.access(false));
  if (scratch != nullptr) acc.add(scratch->access(true));
  acc.add(dst.access(true));
  OpDesc d;
  d.cls = cls;
  d.bytes = src.valid_bytes();
  d.rows = src.valid_rows;
  d.row_bytes = src.valid_cols * src.esize;
  d.in_esize = src.esize;
  d.reduce = reduce;
  issue_op(PYPTO_VECTOR, d, name, acc, static_cast<uint64_t>(src.valid_bytes()), dst.addr);
}

}  // namespace pypto::isa
