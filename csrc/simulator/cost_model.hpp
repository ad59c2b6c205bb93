// The one place that turns an instruction description into cycles, from the platform table
// (see platform/*.cpp for the numbers and their sources). Results are whole cycles, rounded
// up once per instruction.
//
// A GM transfer has a fixed part (the lead before data flows, and per-burst request
// overheads) and a data phase whose length the memory system decides: bytes / port bandwidth
// when the core has GM to itself, longer when other cores share HBM.
#pragma once
#include <cstdint>

#include "simulator/op_desc.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto::cost {

// Cycles of an instruction that does not touch GM.
uint64_t cycles(const Platform& p, const OpDesc& d);

// Bytes per cycle of one route.
double bandwidth(const Platform& p, Link r);
// Cycles between a GM transfer's start and its first data beat, when its lines miss / hit the L2.
double gm_lead(const Platform& p, const OpDesc& d, bool l2_hit);
// Whole cycles of a GM transfer whose lead and data phase lasted `phase` cycles.
uint64_t gm_cycles(const Platform& p, const OpDesc& d, double phase);


}  // namespace pypto::cost
