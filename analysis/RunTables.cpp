#include "analysis/RunTables.hpp"

#include "analysis/Hdf5Table.hpp"

#include <algorithm>

namespace memwall {

void write_memory(H5::Group& f, const std::vector<PoolResult>& pools)
{
  H5::Group mem = f.createGroup("memory");
  for (const auto& p : pools) {
    H5::Group g = mem.createGroup(p.name);
    attribute(g, "hardware", p.hardware);
    attribute(g, "capacity_bytes", p.capacity);
    attribute(g, "peak_bytes", p.peak_bytes);
    attribute(g, "peak_time_s", p.peak_time);
    integer_attribute(g, "count", p.count);
    column(g, "time_s", doubles(p.timeline, [](const MemoryEvent& e) { return e.time; }));
    column(g, "category",
           strings(p.timeline, [](const MemoryEvent& e) { return std::string(mem_category_name(e.category)); }));
    column(g, "category_bytes", doubles(p.timeline, [](const MemoryEvent& e) { return e.category_bytes; }));
    column(g, "total_bytes", doubles(p.timeline, [](const MemoryEvent& e) { return e.total_bytes; }));
  }
}

void write_links(H5::Group& f, const std::vector<LinkResult>& links)
{
  H5::Group g = f.createGroup("links");
  column(g, "name", strings(links, [](const LinkResult& l) { return l.name; }));
  column(g, "bandwidth", doubles(links, [](const LinkResult& l) { return l.bandwidth; }));
  column(g, "bytes", doubles(links, [](const LinkResult& l) { return l.bytes; }));
  column(g, "busy_s", doubles(links, [](const LinkResult& l) { return l.busy_s; }));
}

// Serving runs: one row per request and the KV cache after every iteration.
std::vector<PoolResult> read_memory(const H5::Group& parent)
{
  std::vector<PoolResult> pools;
  H5::Group mem = parent.openGroup("memory");
  for (const std::string& name : members(mem)) {
    H5::Group g = mem.openGroup(name);
    PoolResult p;
    p.name       = name;
    p.hardware   = text_attribute(g, "hardware").value_or("");
    p.capacity   = number_attribute(g, "capacity_bytes").value_or(0);
    p.peak_bytes = number_attribute(g, "peak_bytes").value_or(0);
    p.peak_time  = number_attribute(g, "peak_time_s").value_or(0);
    double count = number_attribute(g, "count").value_or(1);
    p.count      = count >= 1 && count <= 1e9 ? static_cast<int>(count) : 1; // a damaged file's NaN or 1e300
    std::vector<double> time = read_numbers(g, "time_s"), cat_bytes = read_numbers(g, "category_bytes"),
                        total     = read_numbers(g, "total_bytes");
    std::vector<std::string> cats = read_texts(g, "category");
    const auto& names             = mem_category_names();
    for (size_t i = 0; i < time.size() && i < cats.size() && i < cat_bytes.size() && i < total.size(); ++i) {
      auto c               = std::find(names.begin(), names.end(), cats[i]);
      MemCategory category = c == names.end() ? MemCategory::other : static_cast<MemCategory>(c - names.begin());
      p.timeline.push_back({time[i], category, cat_bytes[i], total[i]});
    }
    pools.push_back(std::move(p));
  }
  return pools;
}

std::vector<LinkResult> read_links(const H5::Group& parent)
{
  H5::Group g                   = parent.openGroup("links");
  std::vector<std::string> name = read_texts(g, "name");
  std::vector<double> bw = read_numbers(g, "bandwidth"), bytes = read_numbers(g, "bytes"),
                      busy = read_numbers(g, "busy_s");
  std::vector<LinkResult> links;
  for (size_t i = 0; i < name.size() && i < bw.size() && i < bytes.size() && i < busy.size(); ++i)
    links.push_back({name[i], bw[i], bytes[i], busy[i]});
  return links;
}

} // namespace memwall
