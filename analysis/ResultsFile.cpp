#include "analysis/ResultsFile.hpp"

#include "analysis/FileChecksum.hpp"
#include "analysis/Hdf5Table.hpp"
#include "base/InputError.hpp"

#include <H5Cpp.h>

#include <filesystem>

namespace memwall {

std::string memwall_file_format(const std::string& path)
{
  if (!std::filesystem::is_regular_file(path))
    throw InputError(path + ": results file not found");
  H5::Exception::dontPrint();
  verify_checksum(path); // before libhdf5, which crashes or hangs on some damage
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw InputError(path + ": not an HDF5 file (truncated, or not written by memwall)");
  std::optional<std::string> format;
  try {
    H5::H5File f(path, H5F_ACC_RDONLY);
    format = text_attribute(f.openGroup("/"), "format");
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
  try {
    H5::H5File f(path, H5F_ACC_RDONLY);
    H5::Group root    = f.openGroup("/");
    s.spec_file       = text_attribute(root, "spec_file").value_or("");
    s.hardware        = text_attribute(root, "hardware").value_or("");
    s.title           = text_attribute(root, "title").value_or("memwall: " + s.spec_file + " on " + s.hardware);
    s.memwall_version = text_attribute(root, "memwall_version").value_or("");
    s.git_commit      = text_attribute(root, "git_commit").value_or("");
    s.summary         = nlohmann::ordered_json::parse(text_attribute(root, "summary_json").value_or(""));
  } catch (const H5::Exception& e) {
    throw InputError(path + ": unreadable memwall run file (" + e.getDetailMsg() + "); truncated or corrupt?");
  } catch (const nlohmann::json::exception&) {
    throw InputError(path + ": unreadable memwall run file (summary_json attribute missing or not JSON)");
  }
  return s;
}

} // namespace memwall
