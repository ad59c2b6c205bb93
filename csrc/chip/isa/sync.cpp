// set_flag / wait_flag / pipe_barrier, source locations and block ids.
#include "chip/isa/checks.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

void issue_sync(InstrKind kind, int pipe, const char* name, int src, int dst, int id) {
  CoreContext& core = current_core();
  note_instruction(name, core.loc);
  Instr in;
  in.kind = kind;
  in.pipe = pipe;
  in.op.cls = OpClass::kSync;
  in.name = name;
  in.loc = core.loc;
  in.flag_src = src;
  in.flag_dst = dst;
  in.flag_id = id;
  core.model.issue(std::move(in));
}

}  // namespace

extern "C" void pypto_set_loc(const char* loc) { current_core().loc = loc ? loc : ""; }

extern "C" void pypto_set_flag(int32_t src, int32_t dst, int32_t id) {
  issue_sync(InstrKind::kSetFlag, src >= 0 && src < PYPTO_NUM_PIPES ? src : 0, "SET_FLAG", src, dst,
             id);
}

extern "C" void pypto_wait_flag(int32_t src, int32_t dst, int32_t id) {
  issue_sync(InstrKind::kWaitFlag, dst >= 0 && dst < PYPTO_NUM_PIPES ? dst : 0, "WAIT_FLAG", src,
             dst, id);
}

extern "C" void pypto_pipe_barrier(int32_t pipe) {
  if (pipe != PYPTO_PIPE_ALL && (pipe < 0 || pipe >= PYPTO_NUM_PIPES)) {
    fail(ErrorKind::kFlag, "PIPE_BARRIER", "unknown pipe " + std::to_string(pipe));
  }
  issue_sync(InstrKind::kBarrier, pipe, "PIPE_BARRIER", pipe, pipe, 0);
}

extern "C" void pypto_zero_division(const char* op) {
  fail(ErrorKind::kZeroDivision, "SCALAR",
       std::string("`") + (op ? op : "//") + "` by zero (the divisor evaluated to 0)");
}

extern "C" int64_t pypto_block_idx(void) { return current_core().block_idx; }
extern "C" int64_t pypto_block_num(void) { return current_core().block_num; }

// SYNCALL: a barrier across the blocks of one launch. Both forms first drain the core's pipes
// (as pipe_barrier(PIPE_ALL)), so a block arrives once its earlier stores have ended, and drain
// again after, so nothing later starts before the release.
//   hard (workspace null): the arrival is a sync instruction (sync_cycles); the release is the
//     round's last arrival (the hardware barrier signals every core when the last one arrives).
//   soft: the arrival adds 1 to workspace[0] through the atomic path and the release is one
//     scalar GM read of that counter (scalar_gm_access_cycles) starting at the last arrival:
//     the poll that sees the full count.
// Participants: `used_cores` when positive, else every core of `core_type` (0 aiv_only,
// 1 aic_only, 2 mix) in the launch.
extern "C" void pypto_syncall(const pypto_tensor* workspace, int32_t core_type,
                              int32_t used_cores) {
  const char* op = "SYNCALL";
  CoreContext& core = current_core();
  if (core.waiter == nullptr) fail(ErrorKind::kCrossCore, op, "SYNCALL needs the chip scheduler");
  const int64_t aivs = core.cluster ? core.platform.aivs_per_cluster() : 1;
  const int64_t per_block = core.cluster == nullptr ? 1
                            : core_type == 0        ? aivs
                            : core_type == 1        ? 1
                                                    : 1 + aivs;
  const int64_t participants = used_cores > 0 ? used_cores : core.block_num * per_block;
  pypto_pipe_barrier(PYPTO_PIPE_ALL);
  OpDesc d;
  d.cls = OpClass::kSync;
  AccessList acc;
  // The hard barrier spans every core of its kind, so one launch at a time holds it (the AIC
  // and AIV kernels of a cluster launch have different names: the key cannot be the kernel).
  std::string key = "hard:" + std::to_string(core_type);
  if (workspace != nullptr) {
    check_writable(workspace, op);
    if (workspace->dtype != PYPTO_INT32)
      fail(ErrorKind::kCrossCore, op, "the workspace must be an INT32 tensor");
    const int64_t at = static_cast<int64_t>(reinterpret_cast<intptr_t>(workspace->data));
    key = "soft:" + std::to_string(at);
    d.cls = OpClass::kScalarAccess;
    d.link = Link::kGmToUb;
    d.atomic = true;
    acc.add(Access{PYPTO_GM, at, 1, 4, 4, true});
    const int32_t one = 1;
    data_barrier(core);
    core.atomic_add(workspace->data, workspace->data, PYPTO_INT32, &one, 1);
  }
  uint64_t arrived = 0;
  issue_op(PYPTO_SCALAR, d, op, acc, 4, -1, 0, &arrived);
  const uint64_t last = core.waiter->syncall(key, participants, arrived);
  d.atomic = false;  // soft: the poll's read of the counter; hard: the barrier's signal
  issue_op(PYPTO_SCALAR, d, op, {}, workspace != nullptr ? 4 : 0, -1, last);
  pypto_pipe_barrier(PYPTO_PIPE_ALL);
}
