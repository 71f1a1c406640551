#pragma once
// `memwall export`: a replayed op DAG written as PyTorch profiler traces (Kineto's
// Chrome trace JSON, gzip when the path ends in .gz), one file per GPU that runs ops,
// so that Perfetto and Holistic Trace Analysis show it like a recorded step. Each
// event carries its op whole in args.memwall (every field, its id and dependencies) and
// the first file the DAG's groups and folded ranks, so `workload: {trace: ...}` reads it
// back to the same DAG and the same replay.
#include "sim/result/RunResult.hpp"
#include "workloads/dag/OpDag.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace memwall {

// The files written: `path` itself for one GPU, else "NAME.rankR.json[.gz]" beside it.
// `r` must hold a record per op (RunResult::ops indexed by op id). Each file appears
// whole or not at all.
// `step` goes into the DAG's section as it is (tokens_per_step, precision: what the
// replay's report reads besides the ops).
std::vector<std::string> write_kineto_traces(const OpDag& dag, const RunResult& r, const std::string& gpu_name,
                                             const std::string& path, const nlohmann::json& step = {});

} // namespace memwall
