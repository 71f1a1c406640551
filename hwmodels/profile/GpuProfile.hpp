#pragma once
// A fitted hardware profile of one GPU model: what calibration measured, in the form
// the replay asks for. Written by `memwall calibrate fit`, read by a spec's
// `hardware.profile` or carried by a catalog GPU (catalog/profiles/<gpu>.yaml).
//
//   gemm:         per dtype, the tile/wave GemmModel (time by shape)
//   gemm_passes:  per dtype and pass (fwd, dgrad, wgrad), the same model fitted on that
//                 pass's measurements alone (cuBLAS runs each pass in its own layout)
//   gemm_tables:  per dtype and pass, measured times by shape (GemmTable.hpp)
//   elementwise:  memory-bound kernels: launch + bytes / bandwidth(size)
//   elementwise_families: norm, activation, residual, rope: the same, per family
//   copies:       h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable, peer: per regime
//   collectives:  per kind, ranks and ranks per node: latency + bytes / busbw per regime
//                 (bandwidth is the algorithm bandwidth: bytes of the buffer / time)
#include "hwmodels/kernel/Dtype.hpp"
#include "hwmodels/kernel/GemmPass.hpp"
#include "hwmodels/kernel/KernelFamily.hpp"
#include "hwmodels/profile/GemmModel.hpp"
#include "hwmodels/profile/GemmTable.hpp"
#include "hwmodels/profile/LatencyBandwidthCurve.hpp"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace memwall {

struct CollectiveCurve {
  std::string kind; // all_reduce, all_gather, reduce_scatter, send_recv
  int ranks          = 0;
  int ranks_per_node = 0; // ranks == ranks_per_node: inside one node
  LatencyBandwidthCurve curve;

  bool inside_node() const { return ranks == ranks_per_node; }
};

struct GpuProfile {
  std::string gpu;    // catalog id the profile was measured on
  std::string source; // where the measurements came from
  // How a run named it ("catalog h100-sxm-80gb", or the file a spec gave), and, for a
  // user's profile laid over the shipped one, which parts came from which (overlay_profile).
  std::string name;
  std::string parts;
  // Catalog id of the GPU whose fitted profile this one scales (a sibling part with the
  // same chip and clocks, another memory); empty when fitted on this GPU's own measurements.
  std::string derived_from;
  // Catalog id of the GPU whose measured collectives inside a node these are, scaled by
  // the NVLink ratio (GpuSpec::collectives_from); empty: the profile's own.
  std::string collectives_from;
  // How the profile was scaled to a GPU derived from the one it measured ("bf16 peak
  // x0.50, HBM x0.50": ProfileScaling.hpp); empty: as measured.
  std::string scaled;
  double collectives_nvlink_bw = 0; // the nvlink_bw they were scaled to
  std::map<Dtype, GemmModel> gemm;
  std::map<std::pair<Dtype, GemmPass>, GemmModel> gemm_passes;
  std::map<std::pair<Dtype, GemmPass>, GemmTable> gemm_tables;
  LatencyBandwidthCurve elementwise; // every memory-bound kernel measured
  // Curves of the kernel families measured apart (KernelFamily.hpp); a kernel of a
  // family not here, or of none, takes `elementwise`.
  std::map<KernelFamily, LatencyBandwidthCurve> elementwise_families;
  std::map<std::string, LatencyBandwidthCurve> copies;
  std::vector<CollectiveCurve> collectives;
  // What timing each kernel alone between two CUDA events added to its measurements beyond
  // the time the kernel holds a busy stream (the events' and the launch's latency):
  // taken off every kernel the profile times. 0: the measurements are that time already.
  double event_overhead_s = 0;
  // The idle time between two kernels queued back to back on one stream (the GPU's front
  // end between launches), part of each kernel's hold on a busy stream; a host-paced
  // kernel (Op::host_paced) holds the GPU for its time less this.
  double launch_gap_s = 0;

  // The GEMM model of `d`; a dtype that was not measured borrows the measured 16-bit
  // (else any) model with the datasheet peak of `d` (`peak`): same efficiency assumed.
  // nullptr when the profile has no GEMM model at all.
  const GemmModel* gemm_model(Dtype d, double peak) const;
  // The model of pass `p` (forward, input_grad, weight_grad): the pass's own where it was
  // fitted apart, else the dtype's (borrowed as above).
  const GemmModel* gemm_model(Dtype d, double peak, GemmPass p) const;
  // Whether GEMMs of `d` were measured pass by pass (models or tables): then a backward
  // is timed as its two gradient GEMMs, each in its own layout.
  bool has_pass_data(Dtype d, double peak) const;
  // Time of the logical GEMM (m, n, k) of pass `p` (GemmPass.hpp) at `d`: the pass's
  // model, corrected by its measured table where the shape lies inside it. A table is
  // shared by dtypes of the same peak and element size (fp16 and bf16 run the same
  // tensor cores). < 0 when the profile has no GEMM model.
  double gemm_time(Dtype d, double peak, GemmPass p, double m, double n, double k, double groups = 1) const;
  // The measured table of `d` and `p` (or its sibling's); nullptr when none.
  const GemmTable* gemm_table(Dtype d, double peak, GemmPass p) const;
  const CollectiveCurve* collective(const std::string& kind, int ranks, int ranks_per_node) const;
  // The curve that times a memory-bound kernel of family `f` (empty when none was fitted).
  const LatencyBandwidthCurve& elementwise_curve(KernelFamily f) const;

private:
  // The measured dtype a dtype without measurements takes its models from.
  std::optional<Dtype> lender(Dtype d) const;
  // (dtype, pass or -1, peak): a copy of the profile scaled to another peak, or one GPU's
  // profile asked at two peaks, never reads a model borrowed at the other.
  mutable std::map<std::tuple<Dtype, int, double>, GemmModel> borrowed_;
};

// `top` (a user's measurements) laid over `base` (the GPU's shipped profile): every part
// `top` measured replaces `base`'s (a GEMM dtype with its pass models and tables; the
// elementwise curve; each kernel family, copy kind and collective), the rest stays
// `base`'s; `parts` says which came from where.
GpuProfile overlay_profile(const GpuProfile& base, const GpuProfile& top);

// Reads a profile YAML (strictly: unknown keys are errors naming file and line).
GpuProfile read_profile(const std::string& yaml_text, const std::string& file);
GpuProfile load_profile(const std::string& path);
// YAML text of a profile; write then read gives the same profile.
std::string profile_yaml(const GpuProfile& p);

// Names of the copy curves a profile may hold.
const std::vector<std::string>& copy_kinds();
const std::vector<std::string>& collective_kinds();

} // namespace memwall
