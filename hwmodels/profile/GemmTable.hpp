#pragma once
// Measured GEMM times of one dtype and pass (GemmPass.hpp), and how they correct the
// fitted GemmModel near the shapes they cover.
//
// The tile/wave model misses what cuBLAS's kernel selection does: at fixed n and k the
// time steps where the heuristic changes tile or split, not where the cheapest one
// would. Measured on an H100 over 24 layers of six models, the model alone predicts
// held-out layers' GEMMs with a 90th-percentile error of 13-18 %; corrected by the
// measured times of the nearest shapes, 8-15 % (calibration/VALIDATION.md).
//
// A table is a set of sweeps: one shape of the layer (the two dimensions that are not
// the token count) timed over token counts. Where a GEMM lies inside the table (its
// token count within a sweep's range, its two fixed dimensions within the range the
// sweeps span), its time is the model's times the model's measured error, interpolated:
// linearly in log token count along each of the nearest sweeps, then weighted by inverse
// distance between the shapes in log2 space. At a measured point that gives the measured
// time. Outside the table the model alone.
#include "hwmodels/kernel/GemmPass.hpp"
#include "hwmodels/profile/GemmModel.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace memwall {

struct GemmSweep {
  double a = 0, b = 0;        // the fixed dimensions, in (m, n, k) order without the token one
  std::vector<double> tokens; // ascending
  std::vector<double> time_s; // measured, one per token count
};

struct GemmTable {
  GemmPass pass = GemmPass::forward;
  std::vector<GemmSweep> sweeps;
  // The model the measurements are corrections of, where the profile was scaled to
  // another GPU's rates (ProfileScaling.hpp): the fit at the measured GPU's. Null: the
  // model that times the GEMM.
  std::shared_ptr<const GemmModel> reference;

  bool empty() const { return sweeps.empty(); }
  // Measured time / model time near (m, n, k), the logical GEMM of `pass`; 0 outside the table.
  double correction(const GemmModel& model, double m, double n, double k) const;
  // Number of measured points.
  size_t points() const;
};

// The text a profile holds one dtype's tables in (its gemm_tables: DTYPE: | block): a
// line per sweep,
//   PASS A B | TOKENS ... | TIME_S ...
// PASS fwd, dgrad or wgrad; A B the fixed dimensions (GemmSweep); the token counts
// ascending and a time for each. One block keeps a profile of 3 x 24 sweeps x 30 points
// quick to read (as YAML lists of 4,300 numbers it took 5.7 ms, most of a small run).
// InputError naming `where` and the line for anything else.
std::map<GemmPass, GemmTable> parse_gemm_sweeps(const std::string& text, const std::string& where);
std::string gemm_sweeps_text(const std::vector<const GemmTable*>& tables);

// The token count and the two fixed dimensions of the logical GEMM (m, n, k) of `pass`,
// and back.
struct GemmSweepPoint {
  double tokens, a, b;
};
GemmSweepPoint sweep_point(GemmPass pass, double m, double n, double k);
void gemm_dims(GemmPass pass, const GemmSweepPoint& p, double& m, double& n, double& k);

// The logical GEMM of `pass` of the layer whose forward GEMM is (tokens, out, in).
void pass_dims(GemmPass pass, double tokens, double out, double in, double& m, double& n, double& k);

} // namespace memwall
