// Where a step's time went on the GPU the breakdown describes (StepReport.hpp): unions of
// intervals from the replay (StepIntervals), each part the time one kind of work held the
// GPU while nothing before it in the order compute, communication, paging, the host's own
// work, copies did; stalls split by what they waited for and in which phase.
#include "analysis/StepReport.hpp"

#include <algorithm>

namespace memwall {
namespace {

using Intervals = std::vector<std::pair<double, double>>;

Intervals merged(Intervals v)
{
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

// The parts of the merged, sorted `a` that the merged, sorted `cover` covers (`inside`)
// or not: one sweep over both (a run of 10^6 ops must not take 10^12 steps).
Intervals split(const Intervals& a, const Intervals& cover, bool inside)
{
  Intervals out;
  size_t j = 0;
  for (auto [s, e] : a) {
    while (j < cover.size() && cover[j].second <= s)
      ++j;
    for (size_t k = j; k < cover.size() && cover[k].first < e; ++k) {
      if (!inside && cover[k].first > s)
        out.emplace_back(s, cover[k].first);
      if (inside)
        out.emplace_back(std::max(s, cover[k].first), std::min(e, cover[k].second));
      s = std::max(s, cover[k].second);
      if (s >= e)
        break;
    }
    if (!inside && e > s)
      out.emplace_back(s, e);
  }
  return out;
}

double length(const Intervals& a)
{
  double t = 0;
  for (const auto& [s, e] : a)
    t += e - s;
  return t;
}

double uncovered(const Intervals& a, const Intervals& cover) { return length(split(a, cover, false)); }

// One thing a stall may have waited for, in one phase.
struct StallSourcePart {
  std::string cause;
  StepPhase phase;
  const IntervalUnion* when;
};

// Takes from `left` the part each source covers, in the order given, into `parts`.
void attribute(Intervals left, const std::string& stall, const std::vector<StallSourcePart>& sources,
               std::vector<Breakdown::Part>& parts)
{
  for (const StallSourcePart& src : sources) {
    double t = length(split(left, src.when->intervals(), true));
    if (t > 0)
      parts.push_back({stall, src.cause, src.phase, t});
    left = split(left, src.when->intervals(), false);
  }
}

} // namespace

const DeviceRef* busiest_gpu(const RunResult& r)
{
  for (const auto& p : r.pools)
    if (p.device.kind == DeviceKind::gpu)
      return &p.device;
  return nullptr;
}

Breakdown step_breakdown(const RunResult& r)
{
  Breakdown b;
  const DeviceRef* gpu = busiest_gpu(r);
  if (!gpu)
    return b;
  // From the replay when it kept no record per op, else from the records: one rule.
  StepIntervals from_records;
  const StepIntervals* in = &r.step_intervals;
  if (!r.step_intervals.present) {
    from_records.gpu = *gpu;
    for (const auto& op : r.ops)
      from_records.add(op.kind, op.stream, op.device, op.start, op.end, op.paging_s, op.phase, op.pageable);
    in = &from_records;
  }
  if (in->compute.empty())
    return b;
  const Intervals& compute = in->compute.intervals();
  const Intervals& comm    = in->comm.intervals();
  const Intervals& paging  = in->paging.intervals();
  const Intervals& copies  = in->copies.intervals();
  double first = compute.front().first, last = compute.back().second;
  b.compute      = in->compute.length();
  b.exposed_comm = uncovered(comm, compute);
  Intervals busy = compute;
  busy.insert(busy.end(), comm.begin(), comm.end());
  busy = merged(busy);
  // Each stall once as intervals: its length, and what it is made of.
  Intervals paged = split(paging, busy, false);
  b.paging_stall  = length(paged);
  std::vector<StallSourcePart> sources;
  for (size_t p = 0; p < step_phase_count; ++p)
    sources.push_back({"faults", static_cast<StepPhase>(p), &in->paging_parts[p]});
  attribute(std::move(paged), "paging", sources, b.stall_parts);
  busy.insert(busy.end(), paging.begin(), paging.end());
  busy                  = merged(busy);
  const Intervals& host = in->host.intervals();
  b.host_overhead       = uncovered(host, busy);
  busy.insert(busy.end(), host.begin(), host.end());
  busy              = merged(busy);
  Intervals waiting = split(copies, busy, false);
  b.offload_stall   = length(waiting);
  sources.clear();
  for (size_t c = 0; c < stall_source_count; ++c)
    for (size_t p = 0; p < step_phase_count; ++p) {
      auto source = static_cast<StallSource>(c);
      auto phase  = static_cast<StepPhase>(p);
      sources.push_back({stall_source_name(source), phase, &in->copy_part(source, phase)});
    }
  attribute(std::move(waiting), "offload", sources, b.stall_parts);
  std::stable_sort(b.stall_parts.begin(), b.stall_parts.end(),
                   [](const Breakdown::Part& x, const Breakdown::Part& y) { return x.seconds > y.seconds; });
  // Time between the device's first and last kernel when it neither computes, nor
  // communicates, nor copies, nor pages: it waits for another pipeline stage.
  busy.insert(busy.end(), copies.begin(), copies.end());
  // A server idle between requests is not waiting on a pipeline stage.
  if (!r.serving.present)
    b.pipeline_bubble = uncovered({{first, last}}, merged(busy));
  return b;
}

} // namespace memwall
