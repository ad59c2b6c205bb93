// The trace cleaner's JSON reader (csrc/tools/json_scan) against yyjson on one TRACE payload:
// each validates the document and walks every event's members (what the cleaner's first pass
// reads); then the whole rebuild. Built and run by bench_json_reader.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tools/json_scan.hpp"
#include "tools/trace_clean.hpp"
#include "yyjson.h"

using namespace pypto::tools;
using Clock = std::chrono::steady_clock;

template <class F>
double best(F f, int n = 5) {
  double b = 1e9;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    f();
    b = std::min(b, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return b;
}

int main(int argc, char** argv) {
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  size_t events = 0, sink = 0;
  // json_scan: validate the document and walk every event's members (what pass 1 reads).
  double scan = best([&] {
    json::Reader r(doc);
    std::string scratch;
    r.open('{');
    events = 0;
    for (bool f = true; r.more('}', f); f = false) {
      json::text_of(r.key(), scratch);
      if (r.peek() != '[') {
        r.value();
        continue;
      }
      r.open('[');
      for (bool g = true; r.more(']', g); g = false, ++events) {
        r.open('{');
        for (bool h = true; r.more('}', h); h = false) {
          sink += json::text_of(r.key(), scratch).size();
          sink += static_cast<size_t>(r.value().kind);
        }
      }
    }
  });
  // yyjson: parse to its DOM (validating), then walk the same members.
  double yy = best([&] {
    yyjson_doc* d = yyjson_read(doc.data(), doc.size(), 0);
    if (!d) {
      std::puts("yyjson: parse error");
      std::exit(1);
    }
    yyjson_val* arr = yyjson_obj_get(yyjson_doc_get_root(d), "traceEvents");
    size_t i, n;
    yyjson_val* ev;
    yyjson_arr_foreach(arr, i, n, ev) {
      size_t j, m;
      yyjson_val *k, *v;
      yyjson_obj_foreach(ev, j, m, k, v) { sink += yyjson_get_len(k) + yyjson_get_type(v); }
    }
    yyjson_doc_free(d);
  });
  double yy_raw = best([&] {  // numbers kept as their text, as a verbatim copy would need
    yyjson_doc* d = yyjson_read(doc.data(), doc.size(), YYJSON_READ_NUMBER_AS_RAW);
    sink += yyjson_get_len(yyjson_obj_get(yyjson_doc_get_root(d), "traceEvents"));
    yyjson_doc_free(d);
  });
  double clean = best([&] { sink += clean_trace(doc, false, "x").json.size(); }, 3);
  const double mb = doc.size() / 1e6;
  std::printf("payload %.1f MB, %zu events\n", mb, events);
  std::printf("%-34s %8.1f ms %8.0f MB/s %10.0f events/s\n", "json_scan validate+walk", scan * 1e3,
              mb / scan, events / scan);
  std::printf("%-34s %8.1f ms %8.0f MB/s %10.0f events/s\n", "yyjson read+walk", yy * 1e3, mb / yy,
              events / yy);
  std::printf("%-34s %8.1f ms %8.0f MB/s %10.0f events/s\n", "yyjson read (numbers as raw)",
              yy_raw * 1e3, mb / yy_raw, events / yy_raw);
  std::printf("%-34s %8.1f ms %8.0f MB/s %10.0f events/s\n", "clean_trace (whole rebuild)",
              clean * 1e3, mb / clean, events / clean);
  return sink == 42;
}
