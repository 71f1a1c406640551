// Streaming reader of Kineto traces: nlohmann's SAX interface over a gzip stream, so a
// trace is never held whole, only the events memwall keeps (KinetoTrace.hpp).
#include "base/InputError.hpp"
#include "base/JsonInput.hpp"
#include "workloads/trace/GzipInput.hpp"
#include "workloads/trace/JsonSubtree.hpp"
#include "workloads/trace/KinetoTrace.hpp"
#include "workloads/trace/ObjectKeys.hpp"
#include "workloads/trace/TraceScalar.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <istream>
#include <unordered_map>

namespace memwall {
namespace {

class TraceSax : public nlohmann::json_sax<nlohmann::json> {
public:
  explicit TraceSax(KinetoTrace& out) : out_(out) {}

  bool null() override { return capturing() ? dom_value(nullptr) : put({}); }
  bool boolean(bool b) override
  {
    return capturing() ? dom_value(b) : put({TraceScalar::Kind::integer, b ? 1 : 0, 0, {}});
  }
  bool number_integer(number_integer_t v) override
  {
    return capturing() ? dom_value(v) : put({TraceScalar::Kind::integer, v, 0, {}});
  }
  bool number_unsigned(number_unsigned_t v) override
  {
    if (capturing())
      return dom_value(v);
    TraceScalar s{TraceScalar::Kind::integer, static_cast<int64_t>(v), 0, {}};
    if (v > static_cast<number_unsigned_t>(INT64_MAX))
      s = {TraceScalar::Kind::real, 0, static_cast<double>(v), std::to_string(v)};
    return put(s);
  }
  bool number_float(number_float_t v, const string_t& s) override
  {
    return capturing() ? dom_value(v) : put({TraceScalar::Kind::real, 0, v, s});
  }
  bool string(string_t& s) override
  {
    return capturing() ? dom_value(std::move(s)) : put({TraceScalar::Kind::text, 0, 0, std::move(s)});
  }
  bool binary(binary_t&) override { return capturing() ? dom_value(nullptr) : put({}); }

  bool start_object(std::size_t) override
  {
    ++depth_;
    if (capturing() || (depth_ == 5 && in_args() && arg_ == "memwall") || (depth_ == 2 && top_ == "memwall"))
      return dom_open(nlohmann::json::object());
    keys_.open(depth_);
    if (depth_ == 1)
      root_object_ = true;
    if (depth_ == 3 && top_ == "traceEvents")
      event_ = Event{};
    return true;
  }
  bool end_object() override
  {
    if (capturing())
      return dom_close();
    if (depth_ == 3 && top_ == "traceEvents")
      keep_event();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override
  {
    ++depth_;
    if (capturing())
      return dom_open(nlohmann::json::array());
    if (depth_ == 2 && top_ == "traceEvents")
      saw_events_ = true;
    return true;
  }
  bool end_array() override
  {
    if (capturing())
      return dom_close();
    --depth_;
    return true;
  }
  bool key(string_t& k) override
  {
    // nlohmann keeps the last of a key given twice, and this reader the first or the
    // last field by field: a trace that says two things is refused, as every JSON input is.
    if (capturing()) {
      if (!subtree_.key(k))
        twice(k);
      return true;
    }
    if (!keys_.add(depth_, k))
      twice(k);
    if (depth_ == 1)
      top_ = k;
    else if (depth_ == 2 || depth_ == 3)
      key2_[depth_ - 2] = k;
    else if (depth_ == 4)
      arg_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override
  {
    throw InputError(out_.file + ": not a JSON trace (at byte " + std::to_string(position) + ": " + ex.what() + ")");
  }

  [[noreturn]] void twice(const std::string& k) const
  {
    std::string where = top_ == "traceEvents" && depth_ >= 3 ? "traceEvents[" + std::to_string(events_) + "]"
                        : depth_ >= 2                        ? top_
                                                             : "the top-level object";
    throw InputError(out_.file + ": " + where + ": key '" + one_line(k) +
                     "' given twice in one object; give each key once");
  }

  bool root_object() const { return root_object_; }
  bool saw_events() const { return saw_events_; }

private:
  struct Event {
    std::string ph, cat, name;
    int64_t tid = 0, ts_ns = 0, dur_ns = 0;
    bool has_ts = false, ts_given = false, dur_given = false, dur_ok = true;
    // args
    int64_t device = -1, stream = -1, correlation = -1;
    double bytes = 0;
    TraceCollective coll;
    bool is_collective = false;
    TraceMemoryEvent mem;
    nlohmann::json memwall;                               // args.memwall of an exported trace
    int64_t wait_on_stream = -1, record_correlation = -1; // cuda_sync
    // A byte count that is not a number (or is negative where it cannot be), refused if
    // the event is one whose bytes memwall uses: args.bytes, or the allocator field named.
    bool bad_bytes = false;
    std::string bad_memory;
  };

  bool in_args() const { return top_ == "traceEvents" && key2_[1] == "args"; }

  // An event's args.memwall or the top-level "memwall", kept whole (JsonSubtree).
  bool capturing() const { return subtree_.active(); }
  bool dom_value(nlohmann::json v)
  {
    subtree_.value(std::move(v));
    return true;
  }
  bool dom_open(nlohmann::json v)
  {
    if (!subtree_.open(std::move(v)))
      throw InputError(out_.file + ": traceEvents[" + std::to_string(events_) + "]: args.memwall nested deeper than " +
                       std::to_string(json_max_depth) + " levels");
    return true;
  }
  bool dom_close()
  {
    --depth_;
    if (subtree_.close()) {
      if (depth_ == 1) // the top-level "memwall"
        out_.memwall_dag = subtree_.take();
      else
        event_.memwall = subtree_.take();
    }
    return true;
  }

  bool put(TraceScalar v)
  {
    if (depth_ == 0) // a bare scalar document
      return true;
    if (top_ == "traceEvents") {
      if (depth_ == 3)
        event_field(v);
      else if (depth_ == 4 && key2_[1] == "args")
        arg_field(v);
      return true;
    }
    if (top_ == "distributedInfo" && depth_ == 2) {
      if (key2_[0] == "rank")
        out_.rank = static_cast<int>(std::clamp<int64_t>(trace_int(v), 0, 1 << 30));
      else if (key2_[0] == "world_size")
        out_.world_size = static_cast<int>(std::clamp<int64_t>(trace_int(v), 1, 1 << 30));
    }
    if (top_ == "deviceProperties" && depth_ == 3 && key2_[1] == "name" && out_.gpu_name.empty() &&
        v.kind == TraceScalar::Kind::text)
      out_.gpu_name = v.s;
    if (top_ == "deviceProperties" && depth_ == 3 && key2_[1] == "totalGlobalMem" && out_.gpu_memory_bytes == 0 &&
        (v.kind == TraceScalar::Kind::integer || v.kind == TraceScalar::Kind::real))
      out_.gpu_memory_bytes = std::max(0.0, static_cast<double>(trace_int(v)));
    return true;
  }

  void event_field(const TraceScalar& v)
  {
    const std::string& k = key2_[1];
    if (k == "ph" && v.kind == TraceScalar::Kind::text)
      event_.ph = v.s;
    else if (k == "cat" && v.kind == TraceScalar::Kind::text)
      event_.cat = v.s;
    else if (k == "name" && v.kind == TraceScalar::Kind::text)
      event_.name = v.s;
    else if (k == "tid")
      event_.tid = trace_int(v);
    else if (k == "ts") {
      event_.ts_given = true;
      event_.has_ts   = trace_time_ns(v, event_.ts_ns);
    } else if (k == "dur") {
      event_.dur_given = true;
      event_.dur_ok    = trace_time_ns(v, event_.dur_ns);
    }
  }

  void arg_field(const TraceScalar& v)
  {
    const std::string& a = arg_;
    if (a == "device")
      event_.device = trace_int(v);
    else if (a == "stream")
      event_.stream = trace_int(v);
    else if (a == "correlation")
      event_.correlation = trace_int(v);
    else if (a == "bytes") {
      int64_t b        = 0;
      event_.bad_bytes = !trace_count(v, b) || b < 0;
      event_.bytes     = static_cast<double>(b);
    } else if (a == "Collective name" && v.kind == TraceScalar::Kind::text) {
      event_.coll.name     = v.s;
      event_.is_collective = true;
    } else if (a == "In msg nelems" || a == "In msg size")
      event_.coll.in_elements = trace_int(v);
    else if (a == "Out msg nelems" || a == "Out msg size")
      event_.coll.out_elements = trace_int(v);
    else if (a == "Group size")
      event_.coll.group_size = static_cast<int>(std::clamp<int64_t>(trace_int(v), 0, 1 << 30));
    else if (a == "dtype" && v.kind == TraceScalar::Kind::text)
      event_.coll.dtype = v.s;
    else if (a == "Process Group Ranks" && v.kind == TraceScalar::Kind::text)
      event_.coll.ranks = trace_rank_list(v.s);
    else if (a == "wait_on_stream")
      event_.wait_on_stream = trace_int(v);
    else if (a == "wait_on_cuda_event_record_corr_id")
      event_.record_correlation = trace_int(v);
    else if (a == "Device Type" || a == "Device Id" || a == "Addr" || a == "Bytes" || a == "Total Allocated" ||
             a == "Total Reserved")
      memory_field(a, v);
  }

  // An allocator event's fields ([memory]): integers, only Bytes negative (a free).
  void memory_field(const std::string& a, const TraceScalar& v)
  {
    int64_t x = 0;
    bool ok   = trace_count(v, x) && (a == "Bytes" || x >= (a == "Device Id" ? -1 : 0));
    if (!ok && event_.bad_memory.empty())
      event_.bad_memory = "args." + a;
    TraceMemoryEvent& m = event_.mem;
    if (a == "Device Type")
      m.device_type = static_cast<int>(std::clamp<int64_t>(x, 0, 1 << 20));
    else if (a == "Device Id")
      m.device_id = static_cast<int>(std::clamp<int64_t>(x, -1, 1 << 20));
    else if (a == "Addr")
      m.addr = static_cast<uint64_t>(x);
    else if (a == "Bytes")
      m.bytes = x;
    else if (a == "Total Allocated")
      m.total_allocated = x;
    else
      m.total_reserved = x;
  }

  [[noreturn]] void bad_field(size_t index, const std::string& name, const std::string& field, const char* allowed)
  {
    throw InputError(out_.file + ": traceEvents[" + std::to_string(index) + "] ('" + one_line(name) + "'): " + field +
                     " must be " + allowed);
  }

  void keep_event()
  {
    Event& e = event_;
    key2_[1].clear();
    size_t index = events_++;
    // A span whose time is not a number of microseconds, or that ends before it starts,
    // was dropped without a word: the replay then missed kernels the trace holds.
    if (e.ph == "X" && ((e.ts_given && !e.has_ts) || (e.dur_given && (!e.dur_ok || e.dur_ns < 0))))
      throw InputError(out_.file + ": traceEvents[" + std::to_string(index) + "] ('" + one_line(e.name) +
                       "'): " + (e.ts_given && !e.has_ts ? "ts" : "dur") +
                       " must be a number of microseconds (dur not negative), within 4e15");
    if (!e.memwall.is_null())
      out_.memwall_ops.push_back(std::move(e.memwall));
    if (!e.has_ts)
      return;
    if (e.ph == "i" && e.name == "[memory]") {
      if (!e.bad_memory.empty())
        bad_field(index, e.name, e.bad_memory,
                  "an integer (Bytes negative for a free; Addr, Device Type and the totals not negative)");
      e.mem.ts_ns = e.ts_ns;
      e.mem.tid   = e.tid;
      out_.memory.push_back(e.mem);
      return;
    }
    if (e.ph != "X" || e.dur_ns < 0)
      return;
    if (e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset") {
      if (e.device < 0 || e.stream < 0)
        return;
      if (e.bad_bytes && e.cat != "kernel")
        bad_field(index, e.name, "args.bytes", "a number of bytes, not negative");
      TraceGpuOp op;
      op.kind        = e.cat == "kernel"       ? TraceGpuOp::Kind::kernel
                       : e.cat == "gpu_memcpy" ? TraceGpuOp::Kind::memcpy
                                               : TraceGpuOp::Kind::memset;
      op.start_ns    = e.ts_ns;
      op.dur_ns      = e.dur_ns;
      op.device      = static_cast<int>(std::clamp<int64_t>(e.device, 0, 1 << 20));
      op.stream      = e.stream;
      op.correlation = e.correlation;
      op.bytes       = e.bytes;
      bool nccl      = e.name.rfind("ncclKernel", 0) == 0 || e.name.rfind("ncclDevKernel", 0) == 0;
      op.name        = name_id(std::move(e.name));
      if (e.is_collective || nccl) {
        op.collective = static_cast<int>(out_.collectives.size());
        out_.collectives.push_back(std::move(e.coll));
      }
      out_.gpu_ops.push_back(std::move(op));
    } else if (e.cat == "cuda_sync") {
      // A stream waiting for another's event; host synchronisations (Event Sync,
      // Stream Sync, Context Sync) are read from the runtime calls' recorded times.
      if (e.wait_on_stream >= 0 && e.record_correlation >= 0 && e.stream >= 0 && e.device >= 0 &&
          e.name.find("Wait") != std::string::npos)
        out_.stream_waits.push_back({static_cast<int>(std::clamp<int64_t>(e.device, 0, 1 << 20)), e.stream,
                                     e.wait_on_stream, e.correlation, e.record_correlation});
    } else if (e.cat == "cpu_op" || e.cat == "user_annotation") {
      out_.cpu_ops.push_back({e.ts_ns, e.dur_ns, e.tid, name_id(std::move(e.name))});
    } else if (e.cat == "cuda_runtime" || e.cat == "cuda_driver") {
      TraceCall c;
      c.kind        = trace_call_kind(e.name);
      c.start_ns    = e.ts_ns;
      c.dur_ns      = e.dur_ns;
      c.tid         = e.tid;
      c.correlation = e.correlation;
      out_.calls.push_back(std::move(c));
    }
  }

  uint32_t name_id(std::string name)
  {
    auto [it, fresh] = name_ids_.try_emplace(std::move(name), static_cast<uint32_t>(out_.names.size()));
    if (fresh)
      out_.names.push_back(it->first);
    return it->second;
  }

  KinetoTrace& out_;
  int depth_        = 0;
  bool root_object_ = false, saw_events_ = false;
  std::string top_;     // key at depth 1
  std::string key2_[2]; // keys at depths 2 and 3
  std::string arg_;     // key inside an event's args
  Event event_;
  size_t events_ = 0; // traceEvents read so far
  std::unordered_map<std::string, uint32_t> name_ids_;
  ObjectKeys keys_; // the keys of each open object
  JsonSubtree subtree_;
};

} // namespace

KinetoTrace read_kineto_trace(const std::string& path)
{
  KinetoTrace t;
  t.file = path;
  GzipInput in(path, "trace");
  std::istream stream(&in);
  TraceSax sax(t);
  nlohmann::json::sax_parse(stream, &sax);
  if (!sax.root_object() || !sax.saw_events())
    throw InputError(path + ": not a PyTorch profiler trace (a JSON object with a traceEvents list)");
  if (t.gpu_ops.empty())
    throw InputError(path + ": the trace holds no GPU activity (no kernel, gpu_memcpy or gpu_memset events); "
                            "record it with ProfilerActivity.CUDA");
  // Kineto writes allocator events grouped by thread, not in time order; their totals
  // only add up in time order (equal times: as written).
  std::stable_sort(t.memory.begin(), t.memory.end(),
                   [](const TraceMemoryEvent& a, const TraceMemoryEvent& b) { return a.ts_ns < b.ts_ns; });
  // Enclosing ops first at equal starts, so that each thread's ops nest as a stack.
  std::sort(t.cpu_ops.begin(), t.cpu_ops.end(), [](const TraceCpuOp& a, const TraceCpuOp& b) {
    return a.tid != b.tid ? a.tid < b.tid : a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
  });
  return t;
}

} // namespace memwall
