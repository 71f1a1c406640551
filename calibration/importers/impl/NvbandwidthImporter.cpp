// nvbandwidth --json output: testcases with a bandwidth_matrix in GB/s (rows: source,
// columns: destination; "N/A" where not applicable) for a buffer of bufferSize bytes
// (nvbandwidth's default, 512 MiB, when the file does not say). Each matrix cell
// becomes one row with time = bytes / bandwidth.
#include "calibration/importers/Importer.hpp"

#include "base/InputError.hpp"
#include "base/JsonInput.hpp"

#include <nlohmann/json.hpp>

namespace memwall {
namespace {

std::string benchmark_of(const std::string& name)
{
  bool bidir = name.find("bidirectional") != std::string::npos;
  if (name.rfind("host_to_device", 0) == 0 || name.rfind("all_to_host", 0) == 0)
    return bidir ? "bidir_pinned" : (name.rfind("host_to_device", 0) == 0 ? "h2d_pinned" : "d2h_pinned");
  if (name.rfind("device_to_host", 0) == 0 || name.rfind("host_to_all", 0) == 0)
    return bidir ? "bidir_pinned" : (name.rfind("device_to_host", 0) == 0 ? "d2h_pinned" : "h2d_pinned");
  if (name.rfind("device_to_device", 0) == 0 && !bidir)
    return "peer";
  return "";
}

double cell_value(const nlohmann::json& c)
{
  if (c.is_number())
    return c.get<double>();
  if (c.is_string()) {
    try {
      return std::stod(c.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return 0;
}

std::vector<Measurement> import_nvbandwidth(const ImportRequest& req)
{
  nlohmann::json doc;
  if (std::string why = parse_json_checked(req.text, doc); !why.empty())
    throw InputError(req.path + ": not JSON (" + why + ")");
  const nlohmann::json& root = doc.contains("nvbandwidth") ? doc["nvbandwidth"] : doc;
  if (!root.is_object() || !root.contains("testcases") || !root["testcases"].is_array())
    throw InputError(req.path + ": not nvbandwidth --json output (no testcases list)");
  double bytes = 512.0 * 1024 * 1024;
  if (root.contains("bufferSize") && root["bufferSize"].is_number())
    bytes = root["bufferSize"].get<double>();
  std::vector<Measurement> out;
  for (const auto& tc : root["testcases"]) {
    if (!tc.is_object() || !tc.contains("name") || !tc["name"].is_string() || !tc.contains("bandwidth_matrix"))
      continue;
    std::string name  = tc["name"].get<std::string>();
    std::string bench = benchmark_of(name);
    if (bench.empty() || !tc["bandwidth_matrix"].is_array())
      continue;
    for (const auto& row : tc["bandwidth_matrix"]) {
      if (!row.is_array())
        continue;
      for (const auto& cell : row) {
        double gbps = cell_value(cell);
        if (gbps <= 0)
          continue;
        Measurement m;
        m.gpu       = req.gpu;
        m.benchmark = bench;
        m.bytes     = bytes;
        m.time_s    = bytes / (gbps * 1e9);
        m.source    = req.path + " " + name;
        out.push_back(m);
      }
    }
  }
  if (out.empty())
    throw InputError(req.path + ": no host-device or device-device bandwidth in the nvbandwidth testcases");
  return out;
}

const bool registered = importer_registry().add(
    "nvbandwidth", "nvbandwidth --json output (host<->device and device<->device copy bandwidth matrices)",
    import_nvbandwidth);

} // namespace
} // namespace memwall
