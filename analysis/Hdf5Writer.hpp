#pragma once
// Writes one run to HDF5, laid out for h5py and pandas without glue:
//   /                      attributes: format, memwall_version, git_commit, spec_file,
//                          spec_text, hardware, title, summary_json (the --json object)
//   /ops/{name,device,stream,kind,start_s,end_s,bytes,flops}        one row per op
//   /memory/<device>/{time_s,category,category_bytes,total_bytes}   one row per change
//                    attributes: capacity_bytes, peak_bytes, count, hardware
//   /links/{name,bandwidth,bytes,busy_s}
// Every table is a group of equal-length 1-D datasets:
//   pandas.DataFrame({k: f["ops"][k][:] for k in f["ops"]}).
#include "RunResult.hpp"

#include <string>

namespace memwall {

struct Provenance {
  std::string spec_file;
  std::string spec_text;
  std::string hardware; // e.g. "2 x dgx-a100 (8 x a100-sxm4-80gb)"
  std::string title;    // the summary's heading lines
};

void write_run_hdf5(const RunResult& r, const Provenance& p, const std::string& path);

std::string memwall_version();
std::string memwall_git_commit();

} // namespace memwall
