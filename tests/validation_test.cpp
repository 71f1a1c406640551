// End-to-end step times against published runs of real clusters, with the shipped
// profiles fitted only to microbenchmarks (calibration/VALIDATION.md has the full table;
// the runs here are those fast enough for the test suite).
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

TEST_CASE("megatron_22b_iteration_times_stay_within_12_percent_of_korthikanti_table_4", "[validation]")
{
  // Korthikanti et al. 2022, Table 4: 22B GPT on 8 A100 (tp 8, batch 4, seq 2048):
  // 1.42 s with full recompute, 1.10 s with sequence parallelism and selective recompute.
  // memwall predicts +9.8 % and +5.1 % (VALIDATION.md): a guard against drifting further.
  struct Run {
    const char* spec;
    double published_s;
  };
  for (const Run& run : {Run{"calibration/validation/megatron-22b-full.yaml", 1.42},
                         Run{"calibration/validation/megatron-22b-seqsel.yaml", 1.10}}) {
    INFO(run.spec);
    ExperimentSpec spec = load_spec(test::source_path(run.spec));
    RunResult r         = simulate(spec, true);
    CHECK(r.makespan_s == Approx(run.published_s).epsilon(0.12));
  }
}

namespace {

struct Generation {
  double tokens       = 0; // generated over the run
  double tokens_per_s = 0;
};

// An offline generation spec of calibration/validation, simulated.
Generation generation(const std::string& spec_file)
{
  RunResult r = simulate(load_spec(test::source_path(spec_file)), true);
  Generation g;
  for (const RequestRecord& q : r.serving.requests)
    g.tokens += static_cast<double>(q.output_tokens);
  g.tokens_per_s = g.tokens / r.makespan_s;
  return g;
}

} // namespace

TEST_CASE("flexgens_three_t4_benchmarks_come_within_15_percent_on_average_and_30_at_most", "[validation][inference]")
{
  // FlexGen's README benchmark (Sheng et al., ICML'23): generated tokens/s on one T4 with
  // its benchmark suite's policies, prompt 512, output 32. memwall: +7.3 %, -2.6 %, -21 %
  // (VALIDATION.md); the targets: 15 % mean, 30 % max, the 175B disk case running.
  struct Case {
    const char* spec;
    double tokens;
    double published;
  };
  double sum = 0, worst = 0;
  for (const Case& c : {Case{"calibration/validation/flexgen-opt-6.7b-t4.yaml", 2 * 32, 25.26},
                        Case{"calibration/validation/flexgen-opt-30b-t4.yaml", 144 * 32, 7.32},
                        Case{"calibration/validation/flexgen-opt-175b-t4.yaml", 256 * 32, 0.69}}) {
    INFO(c.spec);
    Generation g = generation(c.spec);
    CHECK(g.tokens == c.tokens);
    double err = std::abs(g.tokens_per_s / c.published - 1);
    sum += err;
    worst = std::max(worst, err);
  }
  CHECK(sum / 3 < 0.15);
  CHECK(worst < 0.30);
}
