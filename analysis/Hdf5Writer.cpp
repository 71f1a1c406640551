#include "analysis/Hdf5Writer.hpp"

#include "analysis/StepReport.hpp"
#include "base/AtomicOutput.hpp"

#include "analysis/Hdf5Table.hpp"
#include "analysis/RunTables.hpp"
#include "base/InputError.hpp"
#include "base/JsonOutput.hpp"
#include "sim/result/StepIntervals.hpp"

#include <cctype>
#include <map>
#include <tuple>

namespace memwall {
namespace {

// "L12.use41.t3.all_gather" -> "L#.use#.t#.all_gather": the ops every layer, use and
// iteration repeat, together.
std::string name_pattern(const std::string& name)
{
  std::string p;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      if (p.empty() || p.back() != '#')
        p += '#';
      continue;
    }
    p += name[i];
  }
  return p;
}

// Per device, the time spans of its training phases (the union of its ops' spans in
// each): what the memory plot's ribbon draws, without a row per op.
void write_phases(H5::Group& f, const RunResult& r)
{
  std::map<std::pair<std::string, std::string>, IntervalUnion> spans;
  for (const OpRecord& o : r.ops)
    if (o.phase == StepPhase::forward || o.phase == StepPhase::backward || o.phase == StepPhase::optimizer)
      if (o.end > o.start)
        spans[{o.device.name(), phase_name(o.phase)}].add(o.start, o.end);
  struct Span {
    std::string device, phase;
    double start, end;
  };
  std::vector<Span> rows;
  for (const auto& [key, u] : spans)
    for (const auto& [a, b] : u.intervals())
      rows.push_back({key.first, key.second, a, b});
  H5::Group g = f.createGroup("phases");
  column(g, "device", strings(rows, [](const Span& s) { return s.device; }));
  column(g, "phase", strings(rows, [](const Span& s) { return s.phase; }));
  column(g, "start_s", doubles(rows, [](const Span& s) { return s.start; }));
  column(g, "end_s", doubles(rows, [](const Span& s) { return s.end; }));
}

void write_ops_summary(H5::Group& f, const RunResult& r)
{
  struct Totals {
    int64_t count = 0;
    double busy = 0, bytes = 0, flops = 0, first = 0, last = 0;
  };
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, Totals> rows; // ordered: the same run, the same file
  for (const OpRecord& o : r.ops) {
    Totals& t =
        rows[{name_pattern(o.name), o.device.name(), stream_name(o.stream), op_kind_name(o.kind), phase_name(o.phase)}];
    t.first = t.count == 0 ? o.start : std::min(t.first, o.start);
    t.last  = t.count == 0 ? o.end : std::max(t.last, o.end);
    ++t.count;
    t.busy += o.end - o.start;
    t.bytes += o.bytes;
    t.flops += o.flops;
  }
  std::vector<std::pair<Key, Totals>> v(rows.begin(), rows.end());
  using Row   = std::pair<Key, Totals>;
  H5::Group g = f.createGroup("ops");
  column(g, "name", strings(v, [](const Row& x) { return std::get<0>(x.first); }));
  column(g, "device", strings(v, [](const Row& x) { return std::get<1>(x.first); }));
  column(g, "stream", strings(v, [](const Row& x) { return std::get<2>(x.first); }));
  column(g, "kind", strings(v, [](const Row& x) { return std::get<3>(x.first); }));
  column(g, "phase", strings(v, [](const Row& x) { return std::get<4>(x.first); }));
  column(g, "count", integers(v, [](const Row& x) { return x.second.count; }));
  column(g, "busy_s", doubles(v, [](const Row& x) { return x.second.busy; }));
  column(g, "bytes", doubles(v, [](const Row& x) { return x.second.bytes; }));
  column(g, "flops", doubles(v, [](const Row& x) { return x.second.flops; }));
  column(g, "first_start_s", doubles(v, [](const Row& x) { return x.second.first; }));
  column(g, "last_end_s", doubles(v, [](const Row& x) { return x.second.last; }));
}

void write_ops(H5::Group& f, const RunResult& r)
{
  H5::Group g = f.createGroup("ops");
  column(g, "name", strings(r.ops, [](const OpRecord& o) { return o.name; }));
  column(g, "device", strings(r.ops, [](const OpRecord& o) { return o.device.name(); }));
  column(g, "stream", strings(r.ops, [](const OpRecord& o) { return std::string(stream_name(o.stream)); }));
  column(g, "kind", strings(r.ops, [](const OpRecord& o) { return std::string(op_kind_name(o.kind)); }));
  column(g, "phase", strings(r.ops, [](const OpRecord& o) { return std::string(phase_name(o.phase)); }));
  column(g, "start_s", doubles(r.ops, [](const OpRecord& o) { return o.start; }));
  column(g, "end_s", doubles(r.ops, [](const OpRecord& o) { return o.end; }));
  column(g, "bytes", doubles(r.ops, [](const OpRecord& o) { return o.bytes; }));
  column(g, "flops", doubles(r.ops, [](const OpRecord& o) { return o.flops; }));
  column(g, "paging_s", doubles(r.ops, [](const OpRecord& o) { return o.paging_s; }));
}

// Unified memory: one group per GPU with its counters as attributes and its managed
// bytes over time, on the GPU and on the host.
void write_paging(H5::Group& f, const RunResult& r)
{
  H5::Group root = f.createGroup("paging");
  for (const PagingResult& p : r.paging) {
    H5::Group g = root.createGroup(p.name);
    integer_attribute(g, "faults", p.faults);
    integer_attribute(g, "fault_batches", p.fault_batches);
    integer_attribute(g, "evictions", p.evictions);
    attribute(g, "migrated_h2d_bytes", p.migrated_h2d_bytes);
    attribute(g, "migrated_d2h_bytes", p.migrated_d2h_bytes);
    attribute(g, "thrashing_pages", p.thrashing_pages);
    attribute(g, "remote_bytes", p.remote_bytes);
    attribute(g, "stall_s", p.stall_s);
    attribute(g, "peak_demand_bytes", p.peak_demand_bytes);
    column(g, "time_s", doubles(p.timeline, [](const ManagedSample& x) { return x.time; }));
    column(g, "resident_bytes", doubles(p.timeline, [](const ManagedSample& x) { return x.resident_bytes; }));
    column(g, "host_bytes", doubles(p.timeline, [](const ManagedSample& x) { return x.host_bytes; }));
  }
}

void write_serving(H5::Group& f, const RunResult& r)
{
  const ServingStats& s = r.serving;
  H5::Group g           = f.createGroup("requests");
  const auto& q         = s.requests;
  column(g, "id", integers(q, [](const RequestRecord& x) { return static_cast<int64_t>(x.id); }));
  column(g, "arrival_s", doubles(q, [](const RequestRecord& x) { return x.arrival_s; }));
  column(g, "first_token_s", doubles(q, [](const RequestRecord& x) { return x.first_token_s; }));
  column(g, "finish_s", doubles(q, [](const RequestRecord& x) { return x.finish_s; }));
  column(g, "prompt_tokens", integers(q, [](const RequestRecord& x) { return static_cast<int64_t>(x.prompt_tokens); }));
  column(g, "output_tokens", integers(q, [](const RequestRecord& x) { return static_cast<int64_t>(x.output_tokens); }));
  column(g, "preemptions", integers(q, [](const RequestRecord& x) { return static_cast<int64_t>(x.preemptions); }));
  column(g, "rejected", integers(q, [](const RequestRecord& x) { return int64_t{x.rejected}; }));
  column(g, "reject_reason", integers(q, [](const RequestRecord& x) { return int64_t{x.reject_reason}; }));
  column(g, "ttft_s",
         doubles(q, [](const RequestRecord& x) { return x.finish_s < 0 ? -1.0 : x.first_token_s - x.arrival_s; }));
  column(g, "latency_s",
         doubles(q, [](const RequestRecord& x) { return x.finish_s < 0 ? -1.0 : x.finish_s - x.arrival_s; }));
  column(g, "max_itl_s", doubles(q, [](const RequestRecord& x) { return x.max_itl_s; }));
  column(g, "scheduled_s", doubles(q, [](const RequestRecord& x) { return x.scheduled_s; }));
  H5::Group kv = f.createGroup("kv_cache");
  attribute(kv, "bytes_per_token", s.kv_bytes_per_token);
  integer_attribute(kv, "capacity_tokens", s.kv_capacity_tokens);
  attribute(kv, "budget_bytes", s.kv_budget_bytes);
  column(kv, "time_s", doubles(s.kv, [](const KvSample& x) { return x.time; }));
  column(kv, "used_bytes", doubles(s.kv, [](const KvSample& x) { return x.used_bytes; }));
  column(kv, "reserved_bytes", doubles(s.kv, [](const KvSample& x) { return x.reserved_bytes; }));
  column(kv, "running_seqs", integers(s.kv, [](const KvSample& x) { return x.running; }));
  column(kv, "waiting_seqs", integers(s.kv, [](const KvSample& x) { return x.waiting; }));
}

} // namespace

std::string memwall_version() { return MEMWALL_VERSION; }
// memwall_git_commit() is generated at build time (GitCommit.cmake).

void stamp_format(H5::Group& root, const std::string& format)
{
  attribute(root, "format", format);
  attribute(root, "format_version", 1.0);
  attribute(root, "memwall_version", memwall_version());
  attribute(root, "git_commit", memwall_git_commit());
}

OpsTable ops_table_from(const std::string& option, const std::string& text)
{
  if (text == "none")
    return OpsTable::none;
  if (text == "summary")
    return OpsTable::summary;
  if (text == "all")
    return OpsTable::all;
  throw InputError(option + " " + text +
                   ": allowed none, summary (one row per kind of op, the default), all (one row "
                   "per op)");
}

void write_run_hdf5(const RunResult& r, const Provenance& p, const std::string& path, OpsTable ops)
{
  write_atomically(path, [&](const std::string& temp) {
    try {
      H5::Exception::dontPrint();
      write_hdf5_file(temp, [&](H5::H5File& f) {
        H5::Group root = f.openGroup("/");
        stamp_format(root, "memwall-run");
        attribute(root, "spec_file", p.spec_file);
        attribute(root, "spec_text", p.spec_text);
        attribute(root, "hardware", p.hardware);
        attribute(root, "title", p.title);
        attribute(root, "summary_json", json_text(report_json(r)));
        if (ops == OpsTable::all)
          write_ops(root, r);
        else if (ops == OpsTable::summary) {
          write_ops_summary(root, r);
          write_phases(root, r);
        }
        write_memory(root, r.pools);
        write_links(root, r.links);
        if (!r.paging.empty())
          write_paging(root, r);
        if (r.serving.present)
          write_serving(root, r);
      });
    } catch (const H5::Exception& e) {
      throw std::runtime_error(path + ": HDF5 write failed: " + e.getDetailMsg());
    }
  });
}

} // namespace memwall
