// Vidur's network profiles (data/profiling/network/<cluster>/{all_reduce,send_recv}.csv):
// median time in ms per (num_workers, size in bytes, devices_per_node).
#include "calibration/importers/Importer.hpp"

#include "base/InputError.hpp"

namespace memwall {
namespace {

std::vector<Measurement> import_vidur_network(const ImportRequest& req)
{
  CsvTable t    = parse_csv_table(req.text, req.path, true);
  size_t c_kind = t.column("collective", req.path), c_n = t.column("num_workers", req.path),
         c_size = t.column("size", req.path), c_dpn = t.column("devices_per_node", req.path);
  std::vector<Measurement> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r    = t.rows[i];
    size_t row       = i + 2;
    std::string kind = r[c_kind];
    if (kind != "all_reduce" && kind != "send_recv")
      throw InputError(req.path + ":" + std::to_string(row) + ": collective '" + kind +
                       "' is not one Vidur profiles (all_reduce, send_recv)");
    Measurement m;
    m.gpu            = req.gpu;
    m.benchmark      = kind;
    m.ranks          = static_cast<int>(csv_number(r[c_n], req.path, row, "num_workers"));
    m.ranks_per_node = static_cast<int>(csv_number(r[c_dpn], req.path, row, "devices_per_node"));
    m.bytes          = csv_number(r[c_size], req.path, row, "size");
    m.time_s = csv_number(r[t.column("time_stats." + kind + ".median", req.path)], req.path, row, "median") * 1e-3;
    m.source = req.path;
    if (m.ranks < 2 || m.ranks_per_node < 1 || m.bytes <= 0 || m.time_s <= 0)
      throw InputError(req.path + ":" + std::to_string(row) +
                       ": needs num_workers >= 2, devices_per_node >= 1, size > 0, time > 0");
    out.push_back(m);
  }
  return out;
}

const bool registered = importer_registry().add(
    "vidur-network", "Vidur network profile CSV (all_reduce or send_recv vs size, workers, devices per node)",
    import_vidur_network);

} // namespace
} // namespace memwall
