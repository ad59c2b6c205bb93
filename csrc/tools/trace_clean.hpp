// clean_sim_trace's rebuild: the TRACE block of a visualize_data.bin (Chrome-trace JSON
// from pypto or the vendor's op simulator) → the clean pipeline view, bytes in, bytes out.
// It runs once per event of a trace of millions, so it is native; the command line around it
// is pypto/tools/clean_sim_trace.py. Its parts: json_scan (the reader), clean_lanes (pipes),
// clean_values (times, names, ids), clean_collect (pass 1), clean_layout (order, sub-lanes),
// clean_output (the events written); this file's implementation puts them together.
//
// The rules:
// 1. Lanes: keep the pipeline pipes (MTE2, MTE1, CUBE, VECTOR, FIXPIPE, MTE3; SCALAR on
//    request), named by the raw tid or by its thread_name metadata (first word, any case,
//    PIPE_ prefix and aliases VEC/V, M/MMAD, FIX, S accepted); drop everything else.
// 2. Events: keep the instruction slices (ph X); drop SET_FLAG / WAIT_FLAG / BAR slices.
// 3. Order: one process per core (cube core before its vector cores, by cluster), lanes in
//    dataflow order, named and sorted through process_* / thread_* metadata.
// 4. Sub-lanes: slices that overlap on one pipe are packed greedily (first fit, by start)
//    into PIPE#1, PIPE#2, ... so every lane is a sequence of disjoint slices.
// 5. Sync: each SET_FLAG → WAIT_FLAG pair (FIFO per core, source pipe, target pipe and
//    flag id, read from args.detail; a flag is an X slice or a B/E pair) becomes a flow
//    arrow from the last producer-pipe instruction that started at or before the set to the
//    first consumer-pipe instruction that starts once the wait is over. Pairs without an
//    instruction on both sides are skipped and counted. Arrow ids count up by process,
//    source pipe, target pipe and flag number.
// 6. Output: compact JSON. A kept slice keeps every member as the JSON text it was read as
//    (whitespace between tokens dropped), with pid, tid and cname (the pipe's colour)
//    replaced; timestamps are therefore verbatim.
// 7. Source lines: a kept slice whose args hold a string pc_addr that `sources` maps to a
//    source line (the API_INSTR block's "AscendC Inner Code" of that address), and no
//    source_line of their own, gets it as args.source_line, the args' last member.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pypto::tools {

// A TRACE payload that cannot be cleaned. The message completes "the TRACE block at
// offset N is ...": "not valid JSON: <problem> at byte B" or "not a trace: <problem>".
class TraceFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CleanStats {
  int64_t slices = 0;         // instruction slices kept
  int64_t lanes = 0;          // lanes drawn, sub-lanes included
  int64_t flows = 0;          // flow arrows drawn
  int64_t skipped_flags = 0;  // sets or waits without a partner or an instruction
};

struct CleanTrace {
  std::string json;  // trace.clean.json, compact UTF-8
  CleanStats stats;
};

// pc_addr text -> source line (rule 7).
using SourceLines = std::unordered_map<std::string, std::string>;

// Applies the rules to a TRACE payload ({"traceEvents": [...]} or a bare array);
// `source` goes to otherData.source. Throws TraceFormatError.
CleanTrace clean_trace(std::string_view payload, bool keep_scalar, std::string_view source,
                       const SourceLines& sources = {});

// The same, streamed to the file `path` (created once the document has been read; a trace of
// millions of events never sits in memory twice). A file that cannot be written throws
// TraceWriteError; on a TraceFormatError found while laying out, the file may be partial.
CleanStats clean_trace_to_file(std::string_view payload, bool keep_scalar, std::string_view source,
                               const std::string& path, const SourceLines& sources = {});

}  // namespace pypto::tools
