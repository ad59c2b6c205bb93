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
