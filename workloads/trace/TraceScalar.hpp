#pragma once
// What the Kineto reader's SAX callbacks deliver, and how a field becomes memwall's: a
// time in microseconds as written to integer nanoseconds (never through a double), an
// integer from whatever JSON type a tool wrote, a CUDA runtime call's kind from its
// name, a rank list from its text.
#include "workloads/trace/KinetoTrace.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace memwall {

// One JSON scalar as the SAX callbacks deliver it.
struct TraceScalar {
  enum class Kind { none, integer, real, text } kind = Kind::none;
  int64_t i                                          = 0;
  double d                                           = 0;
  std::string s; // text, or a real's digits as written
};

// Microseconds as written ("4458676522690.655", "1669783687464300") to integer ns,
// without passing the whole value through a double. False for a non-number or a time
// beyond +-4e15 us (127 years), so that differences and sums of two stay inside int64 ns.
bool trace_time_ns(const TraceScalar& v, int64_t& ns);
// An integer (pid and tid may be strings, "Spans"); 0 when it is none.
int64_t trace_int(const TraceScalar& v);
// A count given as a JSON number (an integer, or a real with no fraction, within
// int64); false for text, null or anything else.
bool trace_count(const TraceScalar& v, int64_t& out);
TraceCall::Kind trace_call_kind(const std::string& name);
// "[0, 1]" -> {0, 1}
std::vector<int> trace_rank_list(const std::string& s);

} // namespace memwall
