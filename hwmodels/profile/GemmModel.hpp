#pragma once
// Time of one GEMM (C[m x n] = A[m x k] B[k x n]) on one GPU, by shape.
//
// A FLOP-count-keyed efficiency fails for skinny and small GEMMs (an A100 runs
// M=64, N=K=12288 at a third of peak). The model follows how a GEMM library runs:
// the output is cut into tiles, one tile per SM at a time, so the time is the number
// of waves times one tile's K loop (wave quantisation); with few tiles the K loop is
// split to fill the SMs; small tiles run below the big tiles' rate. Beside that the
// operands stream through HBM once. The two overlap imperfectly, so they combine as a
// p-norm (p = 1: no overlap, p -> inf: a roofline's max), plus a launch time.
//
//   compute = min over tiles (tm x tn), splits s of
//             ceil(ceil(m/tm) ceil(n/tn) s / sms) * 2 tm tn (ceil(k/s) + k_overhead) / (rate_per_sm * tile_eff)
//   memory  = element_bytes (mk + kn + mn) / bandwidth
//   time    = launch_s + (compute^blend + memory^blend)^(1/blend)
//
// The six parameters are fitted to measured GEMM times (calibration/); peak_flops and
// sms come from the GPU's datasheet.
#include <cstdint>

namespace memwall {

struct GemmModel {
  double peak_flops            = 0;   // datasheet dense peak of the dtype
  int sms                      = 108; // streaming multiprocessors
  double element_bytes         = 2;
  double launch_s              = 5e-6;
  double efficiency            = 0.75;   // of peak, in big tiles
  double bandwidth             = 1.5e12; // operand streaming, bytes/s
  double small_tile_efficiency = 0.8;    // relative rate of 64x128 tiles (64x64: squared)
  double blend                 = 2;      // p-norm exponent combining compute and memory
  double k_overhead            = 64;     // prologue/epilogue of a tile, in K iterations

  // Physical ranges of the fitted parameters: a fit stays inside them, a profile outside
  // them is refused. Launch and tail: 2-10 us on every GPU measured (calibration/data);
  // a 64x128 tile moves 1.5x the operand bytes per FLOP of a 128x128 one, so even
  // bound by operand traffic it keeps 2/3 of the big tile's rate (a fit below half is the
  // parameter standing in for something else); the blend spans sum (1) to max (large);
  // a tile's prologue and epilogue cost no more K iterations than a 1024-deep tile.
  // The operand bandwidth is bounded by the part's HBM peak where the fit knows it.
  static constexpr double min_launch_s = 5e-7, max_launch_s = 1e-3;
  static constexpr double min_small_tile_efficiency = 0.5;
  static constexpr double max_blend = 16, max_k_overhead = 1024;

  // `groups` GEMMs of this shape in one launch (a grouped GEMM): their tiles share the waves.
  double time(double m, double n, double k, double groups = 1) const;
  // Compute-only part (no launch, no memory term): the wave-quantised tile time.
  double compute_time(double m, double n, double k, double groups = 1) const;
};

} // namespace memwall
