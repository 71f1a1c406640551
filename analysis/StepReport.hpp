#pragma once
// Turns a RunResult into the figures a person asks for: step time, throughput, MFU,
// where the time went, peak memory per device by category against capacity, busiest
// links. The JSON keys are a public contract (scripts and tests read them).
#include "sim/result/RunResult.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace memwall {

struct Breakdown {
  double compute         = 0; // compute stream busy
  double exposed_comm    = 0; // collectives running while compute is idle
  double pipeline_bubble = 0; // compute idle waiting on other pipeline stages
  double offload_stall   = 0; // host/NVMe copies or the host's optimizer step running while compute and comm are idle
  double paging_stall    = 0; // unified-memory page migration stalls
  double host_overhead   = 0; // the rank's host work (Python, launches) running while the GPU idles
  // Each stall split by what it waited for and in which phase, largest first.
  struct Part {
    std::string stall; // "offload" or "paging"
    std::string cause; // a StallSource's name; "faults" for paging
    StepPhase phase = StepPhase::setup;
    double seconds  = 0;
  };
  std::vector<Part> stall_parts;
};

// The GPU the breakdown describes: the first GPU holding memory (nullptr: none).
const DeviceRef* busiest_gpu(const RunResult& r);
Breakdown step_breakdown(const RunResult& r);
// Every allocation fitted, and a server had room for KV cache on its GPUs.
bool fits(const RunResult& r);

// The `memwall run --json` object.
nlohmann::ordered_json report_json(const RunResult& r);
// The entry of --json `devices` closest to its capacity (peak / capacity), among those
// of `kind` ("gpu", "host", "nvme"; "" for any): the one that decides whether it fits.
// nullptr when there is none.
const nlohmann::ordered_json* fullest_device(const nlohmann::ordered_json& devices, const std::string& kind = "");

// The readable summary; `title` names the experiment.
std::string report_text(const RunResult& r, const std::string& title);
// The same summary from a --json object (a run file's summary_json).
std::string report_text(const nlohmann::ordered_json& j, const std::string& title);
// The summary as CSV rows "key,value" for spreadsheets: nested keys dotted, devices and
// links by name ("devices.node0.gpu0.peak_bytes"), SI units as in the JSON.
std::string report_csv(const nlohmann::ordered_json& j);

} // namespace memwall
