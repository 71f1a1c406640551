#include "workloads/trace/TraceScalar.hpp"

#include <cmath>
#include <string>

namespace memwall {
namespace {

// Times beyond +-4e15 us (127 years) are refused, so that differences and sums of two
// stay inside int64 nanoseconds.
constexpr int64_t largest_time_us = 4'000'000'000'000'000;

} // namespace

bool trace_time_ns(const TraceScalar& v, int64_t& ns)
{
  if (v.kind == TraceScalar::Kind::integer) {
    if (v.i > largest_time_us || v.i < -largest_time_us)
      return false;
    ns = v.i * 1000;
    return true;
  }
  if (v.kind != TraceScalar::Kind::real || !std::isfinite(v.d) || std::fabs(v.d) > static_cast<double>(largest_time_us))
    return false;
  const std::string& t = v.s;
  size_t dot           = t.find('.');
  bool plain           = dot != std::string::npos && t.find_first_of("eE") == std::string::npos && dot > 0;
  if (!plain) {
    ns = std::llround(v.d * 1000);
    return true;
  }
  int64_t whole = 0;
  bool negative = t[0] == '-';
  for (size_t k = negative ? 1 : 0; k < dot; ++k)
    whole = whole * 10 + (t[k] - '0');
  int64_t frac = 0;
  int digits   = 0;
  for (size_t k = dot + 1; k < t.size() && digits < 3; ++k, ++digits)
    frac = frac * 10 + (t[k] - '0');
  for (; digits < 3; ++digits)
    frac *= 10;
  ns = whole * 1000 + frac;
  if (negative)
    ns = -ns;
  return true;
}

int64_t trace_int(const TraceScalar& v)
{
  if (v.kind == TraceScalar::Kind::integer)
    return v.i;
  if (v.kind == TraceScalar::Kind::real && std::isfinite(v.d) && std::fabs(v.d) < 9.2e18)
    return static_cast<int64_t>(v.d);
  if (v.kind == TraceScalar::Kind::text) { // pid / tid may be strings ("Spans")
    try {
      return std::stoll(v.s);
    } catch (...) {
      return 0;
    }
  }
  return 0;
}

bool trace_count(const TraceScalar& v, int64_t& out)
{
  if (v.kind == TraceScalar::Kind::integer) {
    out = v.i;
    return true;
  }
  if (v.kind == TraceScalar::Kind::real && std::isfinite(v.d) && std::fabs(v.d) < 9.2e18 && v.d == std::floor(v.d)) {
    out = static_cast<int64_t>(v.d);
    return true;
  }
  return false;
}

TraceCall::Kind trace_call_kind(const std::string& name)
{
  if (name.find("Synchronize") != std::string::npos)
    return TraceCall::Kind::sync;
  if (name == "cudaMemcpy" || name == "cudaMemset" || name == "cudaMemcpy2D")
    return TraceCall::Kind::launch_and_sync;
  if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent")
    return TraceCall::Kind::wait_event;
  if (name == "cudaEventRecord" || name == "cuEventRecord" || name == "cudaEventRecordWithFlags")
    return TraceCall::Kind::event_record;
  if (name.rfind("cudaLaunch", 0) == 0 || name.rfind("cuLaunch", 0) == 0 || name.rfind("cudaMemcpy", 0) == 0 ||
      name.rfind("cudaMemset", 0) == 0 || name.rfind("cuMemcpy", 0) == 0 || name.rfind("cuMemset", 0) == 0)
    return TraceCall::Kind::launch;
  return TraceCall::Kind::other;
}

std::vector<int> trace_rank_list(const std::string& s)
{
  std::vector<int> out;
  int64_t v     = 0;
  bool in_digit = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      v        = in_digit ? v * 10 + (c - '0') : (c - '0');
      in_digit = true;
      if (v > 1'000'000'000)
        return {};
    } else {
      if (in_digit)
        out.push_back(static_cast<int>(v));
      in_digit = false;
    }
  }
  if (in_digit)
    out.push_back(static_cast<int>(v));
  return out;
}

} // namespace memwall
