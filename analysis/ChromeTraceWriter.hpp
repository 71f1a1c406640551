#pragma once
// Chrome Trace Event JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open:
// one process per device, one thread track per stream, and a counter track of memory
// per category for every pool.
#include "sim/result/RunResult.hpp"

#include <string>

namespace memwall {

void write_chrome_trace(const RunResult& r, const std::string& path);

} // namespace memwall
