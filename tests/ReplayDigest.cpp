#include "tests/ReplayDigest.hpp"

#include "base/ChildPool.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace memwall::test {
namespace {

bool close(double a, double b, double scale)
{
  return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), scale});
}

} // namespace

std::vector<Digest> replays(const ExperimentSpec& spec, const std::vector<SimulateOptions>& hows)
{
  std::vector<Digest> out(hows.size());
  run_in_children(
      hows.size(), 2, [&](size_t i) { return encode(digest(simulate(spec, false, hows[i]))); },
      [&](size_t i, const ChildOutcome& o) {
        REQUIRE(o.kind == ChildOutcome::Kind::result);
        out[i] = decode(o.data);
      });
  return out;
}

Digest digest(const RunResult& r)
{
  Digest d;
  d.makespan   = r.makespan_s;
  d.activities = r.activities;
  d.op_count   = r.op_count;
  for (const OpRecord& o : r.ops)
    d.ops.insert(d.ops.end(), {o.start, o.end});
  for (const PoolResult& p : r.pools) {
    d.pools.insert(d.pools.end(), {p.peak_bytes, p.peak_time, static_cast<double>(p.oom_count)});
    for (const MemoryEvent& e : p.timeline)
      d.events.insert(d.events.end(), {e.time, static_cast<double>(e.category), e.total_bytes});
  }
  for (const LinkResult& l : r.links) {
    d.links.insert(d.links.end(), {l.bytes, l.busy_s});
    d.link_names += l.name + "\n";
  }
  return d;
}

static void put(std::string& out, const std::vector<double>& v)
{
  uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  if (n > 0) // an empty vector's data() may be null, which append must not see
    out.append(reinterpret_cast<const char*>(v.data()), n * sizeof(double));
}

static std::vector<double> take(const std::string& in, size_t& at)
{
  uint64_t n = 0;
  std::memcpy(&n, in.data() + at, sizeof n);
  std::vector<double> v(n);
  if (n > 0) // memcpy must not see an empty vector's null data()
    std::memcpy(v.data(), in.data() + at + sizeof n, n * sizeof(double));
  at += sizeof n + n * sizeof(double);
  return v;
}

std::string encode(const Digest& d)
{
  std::string out;
  for (const auto* v : {&d.ops, &d.pools, &d.events, &d.links})
    put(out, *v);
  put(out, {d.makespan, static_cast<double>(d.activities), static_cast<double>(d.op_count)});
  return out + d.link_names;
}

Digest decode(const std::string& in)
{
  Digest d;
  size_t at = 0;
  for (auto* v : {&d.ops, &d.pools, &d.events, &d.links})
    *v = take(in, at);
  std::vector<double> tail = take(in, at);
  d.makespan               = tail[0];
  d.activities             = static_cast<int64_t>(tail[1]);
  d.op_count               = static_cast<int64_t>(tail[2]);
  d.link_names             = in.substr(at);
  return d;
}

// How many entries of `a` differ from `b`'s beyond 1e-9 of `scale`.
static size_t mismatches(const std::vector<double>& a, const std::vector<double>& b, double scale)
{
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i)
    n += !close(a[i], b[i], scale);
  return n;
}

// Every figure of `b` (op by op) reproduced by `a` (coalesced). Times are compared
// to 1e-9 of the makespan (never finer than 1e-9 s), bytes to 1e-9 of themselves.
//
// Memory events are compared instant by instant: how many, of which categories, and
// the total after the last. Allocs and frees of different streams at one instant have
// no physical order; a coalesced run applies its own when the clock reaches them, the
// op-by-op replay in the order SimGrid ends the activities before them (seen with 4
// pipeline stages under full recompute: an activation free and a workspace free of
// one GPU at the same instant, swapped). Peaks are compared exactly (pools).
static std::vector<double> by_instant(const std::vector<double>& events, double T)
{
  std::vector<double> out;
  for (size_t i = 0; i < events.size();) {
    size_t j = i;
    std::vector<double> categories;
    while (j < events.size() && close(events[j], events[i], T)) {
      categories.push_back(events[j + 1]);
      j += 3;
    }
    std::sort(categories.begin(), categories.end());
    out.push_back(events[i]);
    out.push_back(static_cast<double>(categories.size()));
    out.insert(out.end(), categories.begin(), categories.end());
    out.push_back(events[j - 1]); // the total after the instant
    i = j;
  }
  return out;
}

void require_same_replay(const Digest& a, const Digest& b)
{
  // Times inside the step to 1e-9 of the makespan, and never finer than 1e-9 s:
  // SimGrid's own precision/timing, within which a flow that ends is ended (a tp
  // all-reduce timed once and reused ended 0.5 ns from where its op-by-op twin did,
  // in a 0.11 s step of 2 stages, with the makespan equal to 1e-15).
  double T = std::max(b.makespan, 1.0);
  CHECK(close(a.makespan, b.makespan, 0));
  CHECK(a.op_count == b.op_count);
  if (!a.ops.empty() && !b.ops.empty()) {
    REQUIRE(a.ops.size() == b.ops.size());
    CHECK(mismatches(a.ops, b.ops, T) == 0);
  }
  REQUIRE(a.pools.size() == b.pools.size());
  CHECK(mismatches(a.pools, b.pools, 0) == 0);
  REQUIRE(a.events.size() == b.events.size());
  std::vector<double> ia = by_instant(a.events, T), ib = by_instant(b.events, T);
  REQUIRE(ia.size() == ib.size());
  CHECK(mismatches(ia, ib, T) == 0);
  CHECK(a.link_names == b.link_names);
  REQUIRE(a.links.size() == b.links.size());
  CHECK(mismatches(a.links, b.links, 0) == 0);
}

void require_same_replay(const RunResult& a, const RunResult& b) { require_same_replay(digest(a), digest(b)); }

} // namespace memwall::test
