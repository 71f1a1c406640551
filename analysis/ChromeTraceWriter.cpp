#include "analysis/ChromeTraceWriter.hpp"

#include "base/AtomicOutput.hpp"
#include "base/JsonOutput.hpp"

#include <fstream>
#include <map>

namespace memwall {

// Events are written one at a time as they are made: a step of millions of ops held as
// one JSON value took gigabytes, and a value that large, running out of memory, could
// not even be destroyed (nlohmann's destructor allocates; exit 134).
void write_chrome_trace(const RunResult& r, const std::string& path)
{
  using nlohmann::ordered_json;
  write_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp);
    bool first = true;
    auto emit  = [&](const ordered_json& event) {
      out << (first ? "" : ",") << json_text(event);
      first = false;
    };
    out << R"({"displayTimeUnit":"ms","traceEvents":[)";
    std::map<DeviceRef, int> pid;
    auto pid_of = [&](const DeviceRef& d) {
      auto [it, fresh] = pid.try_emplace(d, static_cast<int>(pid.size()) + 1);
      if (fresh)
        emit({{"ph", "M"}, {"name", "process_name"}, {"pid", it->second}, {"args", {{"name", d.name()}}}});
      return it->second;
    };
    constexpr double us = 1e6; // trace timestamps are microseconds
    for (const auto& op : r.ops) {
      if (op.kind == OpKind::alloc || op.kind == OpKind::free)
        continue;
      int p = pid_of(op.device);
      emit({{"ph", "X"},
            {"name", op.name},
            {"cat", op_kind_name(op.kind)},
            {"pid", p},
            {"tid", static_cast<int>(op.stream)},
            {"ts", op.start * us},
            {"dur", (op.end - op.start) * us},
            {"args", {{"bytes", op.bytes}, {"flops", op.flops}, {"phase", phase_name(op.phase)}}}});
    }
    for (const auto& [d, p] : pid)
      for (StreamKind s : {StreamKind::compute, StreamKind::h2d, StreamKind::d2h, StreamKind::comm, StreamKind::host,
                           StreamKind::p2p, StreamKind::gather, StreamKind::tp_comm})
        emit({{"ph", "M"},
              {"name", "thread_name"},
              {"pid", p},
              {"tid", static_cast<int>(s)},
              {"args", {{"name", stream_name(s)}}}});
    for (const auto& pool : r.pools) {
      int p = pid_of(pool.device);
      CategoryBytes now{};
      for (const auto& e : pool.timeline) {
        now[static_cast<size_t>(e.category)] = e.category_bytes;
        ordered_json args;
        for (size_t i = 0; i < mem_category_count; ++i)
          args[mem_category_names()[i]] = now[i] / 1073741824.0;
        emit({{"ph", "C"}, {"name", "memory (GiB)"}, {"pid", p}, {"ts", e.time * us}, {"args", args}});
      }
    }
    out << "]}\n";
    out.close();
    if (!out)
      throw std::runtime_error(path + ": could not write the trace");
  });
}

} // namespace memwall
