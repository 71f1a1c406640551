#pragma once
// Writes one run to HDF5, laid out for h5py and pandas without glue:
//   /                      attributes: format, memwall_version, git_commit, spec_file,
//                          spec_text, hardware, title, summary_json (the --json object)
//   /ops/{name,device,stream,kind,start_s,end_s,bytes,flops}        one row per op (--ops all)
//   /ops/{name,device,stream,kind,phase,count,busy_s,bytes,flops,first_start_s,last_end_s}
//                          one row per kind of op (--ops summary, the default): ops of the
//                          same name but for its numbers ("L#.fwd.qkv", "it#.embed"), device,
//                          stream, kind and phase together
//   /memory/<device>/{time_s,category,category_bytes,total_bytes}   one row per change
//                    attributes: capacity_bytes, peak_bytes, count, hardware
//   /links/{name,bandwidth,bytes,busy_s}
// Every table is a group of equal-length 1-D datasets:
//   pandas.DataFrame({k: f["ops"][k][:] for k in f["ops"]}).
#include "sim/result/RunResult.hpp"

#include <string>

namespace memwall {

struct Provenance {
  std::string spec_file;
  std::string spec_text;
  std::string hardware; // e.g. "2 x dgx-a100 (8 x a100-sxm4-80gb)"
  std::string title;    // the summary's heading lines
};

// How much of the ops a run file keeps: none, one row per kind of op, one row per op.
enum class OpsTable { none, summary, all };
// "none" | "summary" | "all"; InputError naming `option` otherwise.
OpsTable ops_table_from(const std::string& option, const std::string& text);

void write_run_hdf5(const RunResult& r, const Provenance& p, const std::string& path, OpsTable ops = OpsTable::all);

std::string memwall_version();
std::string memwall_git_commit();

} // namespace memwall
