#pragma once
// The results file of a sweep (HDF5), laid out for h5py and pandas:
//   /           attributes: format "memwall-sweep", format_version, memwall_version,
//               git_commit, sweep_file, sweep_text, base_spec_text, hardware_profiles,
//               started_at, finished_at ("" while running), points_total, points_done
//   /points/    one 1-D dataset per column, one row per finished point in index order:
//               index, every axis (numbers, or text for non-numeric values), status
//               ("ok" | "error"), error, then every metric (NaN / "" where a point has
//               none); attributes: columns, axes and metrics (the sweep's derived
//               columns), JSON lists in table order
//   /runs/<index>/memory/..., /runs/<index>/links   when the sweep records them
//     pandas.DataFrame({k: f["points"][k][:] for k in f["points"]})
// The file is rewritten whole beside itself and renamed into place, so a sweep killed
// at any moment leaves the last complete version.
#include "app/sweep/SweepRow.hpp"

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace memwall {

struct SweepFileInfo {
  std::string started_at, finished_at;
};

void write_sweep_file(const std::string& path, const SweepSpec& sweep, const std::map<int64_t, SweepRow>& rows,
                      const SweepFileInfo& info);

// A results table read back: columns in table order.
struct ResultsTable {
  std::map<std::string, std::string> attributes; // text attributes of the root
  double points_total = 0;
  std::vector<std::string> columns, axes, metrics;
  std::map<std::string, std::vector<double>> numbers;
  std::map<std::string, std::vector<std::string>> texts;
  size_t rows() const;
};

// Reads a sweep results file; InputError naming the file if it is not one (or is
// truncated or corrupt).
ResultsTable read_sweep_file(const std::string& path);
// The finished rows of a results file written by `sweep`, for --resume; InputError if
// the file holds another sweep.
std::map<int64_t, SweepRow> read_sweep_rows(const std::string& path, const SweepSpec& sweep, SweepFileInfo& info);

// Now as ISO 8601 UTC, or SOURCE_DATE_EPOCH's time when set (reproducible files).
std::string timestamp_now();

} // namespace memwall
