#pragma once
// One measured microbenchmark point, and the tidy CSV every measurement source lands in
// (our CUDA microbenchmarks and the importers of other people's data):
//
//   gpu,benchmark,dtype,m,n,k,ranks,ranks_per_node,bytes,flops,time_s,samples,source,layer,pass
//
// One row per point; a column that does not apply to the benchmark is empty, and the
// last two columns may be left out of a file.
//   gemm:          dtype, m, n, k, flops (2mnk), bytes (operands and result once);
//                  optionally the pass (fwd, dgrad, wgrad: GemmPass.hpp, m n k then the
//                  pass's logical GEMM) and the layer it was taken from (a label)
//   elementwise:   bytes read + written; elementwise.norm, .activation, .residual, .rope:
//                  the same for a kernel of that family (KernelFamily.hpp)
//   h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable, bidir_pinned, peer: bytes
//   all_reduce, all_gather, reduce_scatter, send_recv: ranks, ranks_per_node, bytes
//                  (the buffer, as nccl-tests' size column)
//   managed_fault: bytes migrated by first-touch faults
//   managed_prefetch: bytes migrated to the GPU by cudaMemPrefetchAsync
// time_s is the median of `samples` timed runs, in seconds.
#include "hwmodels/kernel/GemmPass.hpp"
#include "hwmodels/kernel/KernelFamily.hpp"

#include <optional>
#include <string>
#include <vector>

namespace memwall {

struct Measurement {
  std::string gpu; // catalog id, e.g. a100-sxm4-80gb
  std::string benchmark;
  std::string dtype; // gemm only
  double m = 0, n = 0, k = 0;
  int ranks = 0, ranks_per_node = 0;
  double bytes  = 0;
  double flops  = 0;
  double time_s = 0;
  int samples   = 0;
  std::string source; // where the point came from (file, tool, machine)
  std::string layer;  // gemm: the layer the shape comes from (a label; may be empty)
  std::string pass;   // gemm: fwd, dgrad, wgrad, or empty (a GEMM of no known pass)
};

const std::vector<std::string>& measurement_columns();
const std::vector<std::string>& benchmark_names();
bool is_collective(const std::string& benchmark);
// gemm, or one of the pair gemm_burst / gemm_sustained: the same GEMM cold and after a
// run of back-to-back load (memwall-gpubench), whose ratio is the compute rate a GPU's
// power limit lets it sustain; recorded, not fitted yet.
bool is_gemm(const std::string& benchmark);
bool is_sustained_gemm(const std::string& benchmark);
// The kernel family of a memory-bound benchmark: generic for "elementwise", the family
// for "elementwise.norm" and the like; nullopt for any other benchmark.
std::optional<KernelFamily> elementwise_family(const std::string& benchmark);

// Reads a measurement CSV; InputError naming the file, row and column for an unknown
// column, an unknown benchmark, a missing or non-positive time, or an empty file.
std::vector<Measurement> read_measurements(const std::string& path);
std::vector<Measurement> parse_measurements(const std::string& text, const std::string& file);
std::string measurements_csv(const std::vector<Measurement>& rows);
// Writes the CSV whole (a temporary renamed over `path`): no partial file on failure.
void write_measurements(const std::string& path, const std::vector<Measurement>& rows);

// Splits one CSV line into fields (RFC 4180 quotes).
std::vector<std::string> split_csv_line(const std::string& line);

} // namespace memwall
