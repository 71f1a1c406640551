#pragma once
// A fitted hardware profile of one GPU model: what calibration measured, in the form
// the replay asks for. Written by `memwall calibrate fit`, read by a spec's
// `hardware.profile` or carried by a catalog GPU (catalog/profiles/<gpu>.yaml).
//
//   gemm:         per dtype, the tile/wave GemmModel (time by shape)
//   elementwise:  memory-bound kernels: launch + bytes / bandwidth(size)
//   elementwise_families: norm, activation, residual, rope: the same, per family
//   copies:       h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable, peer: per regime
//   collectives:  per kind, ranks and ranks per node: latency + bytes / busbw per regime
//                 (bandwidth is the algorithm bandwidth: bytes of the buffer / time)
#include "Dtype.hpp"
#include "GemmModel.hpp"
#include "KernelFamily.hpp"
#include "LatencyBandwidthCurve.hpp"

#include <map>
#include <string>
#include <vector>

namespace memwall {

struct CollectiveCurve {
  std::string kind;        // all_reduce, all_gather, reduce_scatter, send_recv
  int ranks          = 0;
  int ranks_per_node = 0;  // ranks == ranks_per_node: inside one node
  LatencyBandwidthCurve curve;
};

struct GpuProfile {
  std::string gpu;         // catalog id the profile was measured on
  std::string source;      // where the measurements came from
  // Catalog id of the GPU whose fitted profile this one scales (a sibling part with the
  // same chip and clocks, another memory); empty when fitted on this GPU's own measurements.
  std::string derived_from;
  std::map<Dtype, GemmModel> gemm;
  LatencyBandwidthCurve elementwise; // every memory-bound kernel measured
  // Curves of the kernel families measured apart (KernelFamily.hpp); a kernel of a
  // family not here, or of none, takes `elementwise`.
  std::map<KernelFamily, LatencyBandwidthCurve> elementwise_families;
  std::map<std::string, LatencyBandwidthCurve> copies;
  std::vector<CollectiveCurve> collectives;

  // The GEMM model of `d`; a dtype that was not measured borrows the measured 16-bit
  // (else any) model with the datasheet peak of `d` (`peak`): same efficiency assumed.
  // nullptr when the profile has no GEMM model at all.
  const GemmModel* gemm_model(Dtype d, double peak) const;
  const CollectiveCurve* collective(const std::string& kind, int ranks, int ranks_per_node) const;
  // The curve that times a memory-bound kernel of family `f` (empty when none was fitted).
  const LatencyBandwidthCurve& elementwise_curve(KernelFamily f) const;

private:
  mutable std::map<Dtype, GemmModel> borrowed_;
};

// Reads a profile YAML (strictly: unknown keys are errors naming file and line).
GpuProfile read_profile(const std::string& yaml_text, const std::string& file);
GpuProfile load_profile(const std::string& path);
// YAML text of a profile; write then read gives the same profile.
std::string profile_yaml(const GpuProfile& p);

// Names of the copy curves a profile may hold.
const std::vector<std::string>& copy_kinds();
const std::vector<std::string>& collective_kinds();

} // namespace memwall
