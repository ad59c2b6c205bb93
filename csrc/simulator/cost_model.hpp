// The one place that turns an instruction description into cycles, from the platform table
// (see platform/*.cpp for the numbers and their sources, docs/calibration.md for how each
// class compares with its reference figure). Results are whole cycles, rounded up once per
// instruction. The formulas are the same under every cost profile; a profile is a table.
//
// Vector runs. A vector instruction costs base + per_repeat * repeats when it starts a run and
// per_repeat * repeats when it continues one: the start-up latency of back-to-back vector
// instructions overlaps. An instruction continues a run when it starts on the cycle the
// previous vector instruction of its core ended (it was queued behind it, so the pipe never
// idled); a gap of any length — a wait on a flag, on the scalar issue, on nothing — starts a
// new run. The core model decides (it knows the pipe's history); this file prices both.
//
// GM transfers have a lead (the time before data flows; shorter when every line hits the L2)
// and a data phase whose length the memory system decides: bytes / port bandwidth when the
// core has GM to itself, longer when other cores share HBM. A transfer is also bound by its
// request rate: one request per started burst of a row, one request per gm_request_cycles.
//
// FIXPIPE drains L0C one row at a time: base + rows * (max(row floor, L0C row bytes / drain
// bandwidth) + misalign * (odd part of the row's C0-block count - 1)); the data phase of a
// store to GM runs beside it.
//
// set_flag / wait_flag / pipe_barrier occupy their pipe for sync_cycles (0 on the device
// profile: they only take their scalar issue slot).
#pragma once
#include <cstdint>

#include "simulator/op_desc.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto::cost {

// Cycles of an instruction that does not touch GM; `warm`: a vector instruction continuing a
// run (no start-up latency).
uint64_t cycles(const Platform& p, const OpDesc& d, bool warm = false);
// Whether the instruction's cost depends on its run (vector classes with a start-up latency).
inline bool has_vector_head(const OpDesc& d) {
  return d.cls == OpClass::kVector || d.cls == OpClass::kRowReduce || d.cls == OpClass::kSort ||
         d.cls == OpClass::kTranspose;
}
// Whether the instruction ends its vector stream (a row reduction expanded into pto-isa's
// steps ends with a pipe barrier): the next vector instruction pays its head.
bool ends_vector_run(const Platform& p, const OpDesc& d);

// Bytes per cycle of one route.
double bandwidth(const Platform& p, Link r);
// Bytes per cycle a GM transfer's data phase runs at alone: its route's bandwidth, or less
// when it is request-bound (short rows).
double port_bandwidth(const Platform& p, const OpDesc& d);
// Cycles between a GM transfer's start and its first data beat, when its lines miss / hit the L2.
double gm_lead(const Platform& p, const OpDesc& d, bool l2_hit);
// Whole cycles of a GM transfer whose lead and data phase lasted `phase` cycles.
uint64_t gm_cycles(const Platform& p, const OpDesc& d, double phase);

}  // namespace pypto::cost
