#pragma once
// The memory timelines and link statistics of one run as HDF5 tables, shared by the run
// file (at its root) and the sweep file (under each point's group):
//   memory/<device>/{time_s,category,category_bytes,total_bytes}   one row per change
//                   attributes: hardware, capacity_bytes, peak_bytes, peak_time_s, count
//   links/{name,bandwidth,bytes,busy_s}
#include "sim/result/RunResult.hpp"

#include <H5Cpp.h>

#include <string>
#include <vector>

namespace memwall {

void write_memory(H5::Group& parent, const std::vector<PoolResult>& pools);
void write_links(H5::Group& parent, const std::vector<LinkResult>& links);
// The attributes every memwall file starts with: format, format_version,
// memwall_version, git_commit (Hdf5Writer.cpp).
void stamp_format(H5::Group& root, const std::string& format);
// Read back what the writers wrote (pool devices and per-category maxima are not kept).
std::vector<PoolResult> read_memory(const H5::Group& parent);
std::vector<LinkResult> read_links(const H5::Group& parent);

} // namespace memwall
