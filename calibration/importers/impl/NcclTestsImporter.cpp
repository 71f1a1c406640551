// nccl-tests text output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// sendrecv_perf). The banner names the test ("Collective test starting: all_reduce_perf",
// or the command line), the "#  Rank  N ... on HOST device ..." lines give the ranks and
// how many share a host, and each data row gives size (bytes) and the out-of-place time
// in microseconds (7th field).
#include "calibration/importers/Importer.hpp"

#include "base/InputError.hpp"

#include <map>
#include <set>
#include <sstream>

namespace memwall {
namespace {

std::string kind_of(const std::string& text, const std::string& path)
{
  const std::pair<const char*, const char*> names[] = {{"all_reduce_perf", "all_reduce"},
                                                       {"all_gather_perf", "all_gather"},
                                                       {"reduce_scatter_perf", "reduce_scatter"},
                                                       {"sendrecv_perf", "send_recv"}};
  for (const auto& [tool, kind] : names)
    if (text.find(tool) != std::string::npos)
      return kind;
  throw InputError(path + ": not nccl-tests output: no all_reduce_perf, all_gather_perf, reduce_scatter_perf or "
                          "sendrecv_perf banner");
}

std::vector<Measurement> import_nccl_tests(const ImportRequest& req)
{
  std::string kind = kind_of(req.text, req.path);
  std::istringstream in(req.text);
  std::string line;
  std::map<std::string, int> per_host;
  int ranks = 0;
  std::vector<Measurement> out;
  for (int row = 1; std::getline(in, line); ++row) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;)
      w.push_back(s);
    if (w.size() >= 2 && w[0] == "#" && w[1] == "Rank") {
      ++ranks;
      for (size_t i = 0; i + 1 < w.size(); ++i)
        if (w[i] == "on")
          per_host[w[i + 1]]++;
      continue;
    }
    if (w.empty() || w[0][0] == '#' || w.size() < 8)
      continue;
    Measurement m;
    m.gpu       = req.gpu;
    m.benchmark = kind;
    m.bytes     = csv_number(w[0], req.path, row, "size");
    m.time_s    = csv_number(w[5], req.path, row, "time") * 1e-6;
    m.source    = req.path;
    if (m.bytes > 0 && m.time_s > 0)
      out.push_back(m);
  }
  if (ranks < 2)
    throw InputError(req.path + ": nccl-tests output without '#  Rank N ... on HOST' lines for at least 2 ranks");
  if (out.empty())
    throw InputError(req.path + ": nccl-tests output without data rows");
  int most = 0;
  for (const auto& [host, n] : per_host)
    most = std::max(most, n);
  for (Measurement& m : out) {
    m.ranks          = ranks;
    m.ranks_per_node = most > 0 ? most : ranks;
  }
  return out;
}

const bool registered = importer_registry().add(
    "nccl-tests", "nccl-tests text output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, sendrecv_perf)",
    import_nccl_tests);

} // namespace
} // namespace memwall
