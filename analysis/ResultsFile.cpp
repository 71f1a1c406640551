#include "analysis/ResultsFile.hpp"

#include "analysis/FileChecksum.hpp"
#include "analysis/Hdf5Probe.hpp"
#include "analysis/Hdf5Table.hpp"
#include "base/InputError.hpp"
#include "base/JsonInput.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <filesystem>
#include <vector>

namespace memwall {
namespace {

// memwall's tables are groups of 1-D columns of one length (Hdf5Table.hpp). A file
// edited or forged into uneven columns is refused here, for every reader and for the
// plotting script alike, rather than read past a column's end.
void check_tables(const std::string& path, const H5::Group& g, const std::string& name, int depth)
{
  std::vector<std::pair<std::string, hsize_t>> columns;
  for (const std::string& m : members(g)) {
    H5O_type_t type = g.childObjType(m);
    if (type == H5O_TYPE_GROUP && depth < 8)
      check_tables(path, g.openGroup(m), name + m + "/", depth + 1);
    if (type == H5O_TYPE_DATASET)
      columns.emplace_back(m, column_rows(g.openDataSet(m), m));
  }
  // Measured against the index where the table has one (a sweep's points).
  auto ref = std::find_if(columns.begin(), columns.end(), [](const auto& c) { return c.first == "index"; });
  if (ref == columns.end())
    ref = columns.begin();
  for (const auto& [m, n] : columns)
    if (n != ref->second)
      throw InputError(path + ": " + name + m + " holds " + std::to_string(n) + (n == 1 ? " row, " : " rows, ") + name +
                       ref->first + " " + std::to_string(ref->second) + "; the file is corrupt");
}

} // namespace

std::string memwall_file_format(const std::string& path)
{
  if (!std::filesystem::is_regular_file(path))
    throw InputError(path + ": results file not found");
  H5::Exception::dontPrint();
  verify_checksum(path); // before libhdf5, which crashes or hangs on some damage
  probe_hdf5_file(path); // and damage stamped again, or forged, kills a child instead
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw InputError(path + ": not an HDF5 file (truncated, or not written by memwall)");
  std::optional<std::string> format;
  try {
    H5::H5File f(path, H5F_ACC_RDONLY);
    format = text_attribute(f.openGroup("/"), "format");
    if (format)
      check_tables(path, f.openGroup("/"), "/", 0);
  } catch (const H5::Exception& e) {
    throw InputError(path + ": unreadable HDF5 file (" + e.getDetailMsg() + "); truncated or corrupt?");
  }
  if (!format || (*format != "memwall-run" && *format != "memwall-sweep"))
    throw InputError(path + ": not a memwall results file (format attribute is " +
                     (format ? "'" + *format + "'" : std::string("missing")) +
                     "; memwall run -o writes 'memwall-run', memwall sweep writes 'memwall-sweep')");
  return *format;
}

RunFileSummary read_run_file(const std::string& path)
{
  std::string format = memwall_file_format(path);
  if (format != "memwall-run")
    throw InputError(path + ": a sweep results file, not a run file (memwall run -o writes run files)");
  RunFileSummary s;
  std::string summary;
  try {
    H5::H5File f(path, H5F_ACC_RDONLY);
    H5::Group root    = f.openGroup("/");
    s.spec_file       = text_attribute(root, "spec_file").value_or("");
    s.hardware        = text_attribute(root, "hardware").value_or("");
    s.title           = text_attribute(root, "title").value_or("memwall: " + s.spec_file + " on " + s.hardware);
    s.memwall_version = text_attribute(root, "memwall_version").value_or("");
    s.git_commit      = text_attribute(root, "git_commit").value_or("");
    summary           = text_attribute(root, "summary_json").value_or("");
  } catch (const H5::Exception& e) {
    throw InputError(path + ": unreadable memwall run file (" + e.getDetailMsg() + "); truncated or corrupt?");
  }
  std::string why = parse_json_checked(summary, s.summary);
  if (!why.empty() || !s.summary.is_object())
    throw InputError(path + ": unreadable memwall run file (summary_json attribute missing or not a JSON object" +
                     (why.empty() ? std::string() : ": " + why) + ")");
  return s;
}

} // namespace memwall
