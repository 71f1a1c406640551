#include "Hdf5Writer.hpp"

#include "AtomicOutput.hpp"
#include "StepReport.hpp"

#include <H5Cpp.h>

namespace memwall {
namespace {

// Datasets without modification times, so the same run gives the same bytes.
H5::DSetCreatPropList untimed()
{
  H5::DSetCreatPropList p;
  H5Pset_obj_track_times(p.getId(), false);
  return p;
}

void attribute(H5::H5Object& obj, const std::string& name, const std::string& value)
{
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  H5::Attribute a = obj.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  const char* c   = value.c_str();
  a.write(type, &c);
}

void attribute(H5::H5Object& obj, const std::string& name, double value)
{
  H5::Attribute a = obj.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_DOUBLE, &value);
}

void column(H5::Group& g, const std::string& name, const std::vector<double>& v)
{
  hsize_t n = v.size();
  H5::DataSpace space(1, &n);
  H5::DataSet d = g.createDataSet(name, H5::PredType::NATIVE_DOUBLE, space, untimed());
  if (n)
    d.write(v.data(), H5::PredType::NATIVE_DOUBLE);
}

void column(H5::Group& g, const std::string& name, const std::vector<std::string>& v)
{
  hsize_t n = v.size();
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  H5::DataSpace space(1, &n);
  H5::DataSet d = g.createDataSet(name, type, space, untimed());
  std::vector<const char*> ptrs;
  for (const auto& s : v)
    ptrs.push_back(s.c_str());
  if (n)
    d.write(ptrs.data(), type);
}

template <typename Row, typename Get>
std::vector<double> doubles(const std::vector<Row>& rows, Get get)
{
  std::vector<double> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(get(r));
  return out;
}

template <typename Row, typename Get>
std::vector<std::string> strings(const std::vector<Row>& rows, Get get)
{
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(get(r));
  return out;
}

void write_ops(H5::H5File& f, const RunResult& r)
{
  H5::Group g = f.createGroup("ops");
  column(g, "name", strings(r.ops, [](const OpRecord& o) { return o.name; }));
  column(g, "device", strings(r.ops, [](const OpRecord& o) { return o.device.name(); }));
  column(g, "stream", strings(r.ops, [](const OpRecord& o) { return std::string(stream_name(o.stream)); }));
  column(g, "kind", strings(r.ops, [](const OpRecord& o) { return std::string(op_kind_name(o.kind)); }));
  column(g, "start_s", doubles(r.ops, [](const OpRecord& o) { return o.start; }));
  column(g, "end_s", doubles(r.ops, [](const OpRecord& o) { return o.end; }));
  column(g, "bytes", doubles(r.ops, [](const OpRecord& o) { return o.bytes; }));
  column(g, "flops", doubles(r.ops, [](const OpRecord& o) { return o.flops; }));
}

void write_memory(H5::H5File& f, const RunResult& r)
{
  H5::Group mem = f.createGroup("memory");
  for (const auto& p : r.pools) {
    H5::Group g = mem.createGroup(p.name);
    attribute(g, "hardware", p.hardware);
    attribute(g, "capacity_bytes", p.capacity);
    attribute(g, "peak_bytes", p.peak_bytes);
    attribute(g, "peak_time_s", p.peak_time);
    attribute(g, "count", static_cast<double>(p.count));
    column(g, "time_s", doubles(p.timeline, [](const MemoryEvent& e) { return e.time; }));
    column(g, "category", strings(p.timeline, [](const MemoryEvent& e) { return std::string(mem_category_name(e.category)); }));
    column(g, "category_bytes", doubles(p.timeline, [](const MemoryEvent& e) { return e.category_bytes; }));
    column(g, "total_bytes", doubles(p.timeline, [](const MemoryEvent& e) { return e.total_bytes; }));
  }
}

void write_links(H5::H5File& f, const RunResult& r)
{
  H5::Group g = f.createGroup("links");
  column(g, "name", strings(r.links, [](const LinkResult& l) { return l.name; }));
  column(g, "bandwidth", doubles(r.links, [](const LinkResult& l) { return l.bandwidth; }));
  column(g, "bytes", doubles(r.links, [](const LinkResult& l) { return l.bytes; }));
  column(g, "busy_s", doubles(r.links, [](const LinkResult& l) { return l.busy_s; }));
}

// Serving runs: one row per request and the KV cache after every iteration.
void write_serving(H5::H5File& f, const RunResult& r)
{
  const ServingStats& s = r.serving;
  H5::Group g = f.createGroup("requests");
  const auto& q = s.requests;
  column(g, "id", doubles(q, [](const RequestRecord& x) { return static_cast<double>(x.id); }));
  column(g, "arrival_s", doubles(q, [](const RequestRecord& x) { return x.arrival_s; }));
  column(g, "first_token_s", doubles(q, [](const RequestRecord& x) { return x.first_token_s; }));
  column(g, "finish_s", doubles(q, [](const RequestRecord& x) { return x.finish_s; }));
  column(g, "prompt_tokens", doubles(q, [](const RequestRecord& x) { return static_cast<double>(x.prompt_tokens); }));
  column(g, "output_tokens", doubles(q, [](const RequestRecord& x) { return static_cast<double>(x.output_tokens); }));
  column(g, "preemptions", doubles(q, [](const RequestRecord& x) { return static_cast<double>(x.preemptions); }));
  column(g, "rejected", doubles(q, [](const RequestRecord& x) { return x.rejected ? 1.0 : 0.0; }));
  column(g, "ttft_s", doubles(q, [](const RequestRecord& x) { return x.finish_s < 0 ? -1.0 : x.first_token_s - x.arrival_s; }));
  column(g, "latency_s", doubles(q, [](const RequestRecord& x) { return x.finish_s < 0 ? -1.0 : x.finish_s - x.arrival_s; }));
  column(g, "max_itl_s", doubles(q, [](const RequestRecord& x) { return x.max_itl_s; }));
  H5::Group kv = f.createGroup("kv_cache");
  attribute(kv, "bytes_per_token", s.kv_bytes_per_token);
  attribute(kv, "capacity_tokens", static_cast<double>(s.kv_capacity_tokens));
  column(kv, "time_s", doubles(s.kv, [](const KvSample& x) { return x.time; }));
  column(kv, "used_bytes", doubles(s.kv, [](const KvSample& x) { return x.used_bytes; }));
  column(kv, "reserved_bytes", doubles(s.kv, [](const KvSample& x) { return x.reserved_bytes; }));
  column(kv, "running_seqs", doubles(s.kv, [](const KvSample& x) { return static_cast<double>(x.running); }));
}

} // namespace

std::string memwall_version() { return MEMWALL_VERSION; }
std::string memwall_git_commit() { return MEMWALL_GIT_HASH; }

void write_run_hdf5(const RunResult& r, const Provenance& p, const std::string& path)
{
  write_atomically(path, [&](const std::string& temp) {
    try {
      H5::Exception::dontPrint();
      H5::H5File f(temp, H5F_ACC_TRUNC);
      H5::Group root = f.openGroup("/");
      attribute(root, "format", "memwall-run");
      attribute(root, "format_version", 1.0);
      attribute(root, "memwall_version", memwall_version());
      attribute(root, "git_commit", memwall_git_commit());
      attribute(root, "spec_file", p.spec_file);
      attribute(root, "spec_text", p.spec_text);
      attribute(root, "hardware", p.hardware);
      attribute(root, "summary_json", report_json(r).dump());
      write_ops(f, r);
      write_memory(f, r);
      write_links(f, r);
      if (r.serving.present)
        write_serving(f, r);
    } catch (const H5::Exception& e) {
      throw std::runtime_error(path + ": HDF5 write failed: " + e.getDetailMsg());
    }
  });
}

} // namespace memwall
